"""EDAC (An et al. 2021) on Pendulum-v1, offline: SAC-N's ten critics with the ensemble diversity term, in the zoo
Pendulum SAC's sizes, learning from a file and taking no env step (DI-engine's ``edac`` keys: ``ensemble_num`` is
read as ``n_critics``; ``with_q_entropy=False`` drops the entropy bonus from the target as DI-engine's default).

The data is yours: a run's replay buffer, or demonstrations with a spread of actions. Train the zoo SAC and learn
from the buffer its last resume point saved::

    ding_lite -m serial -c dizoo_configs/pendulum_sac_config.py -s 0
    ding_lite -m offline -c dizoo_configs/pendulum_edac_config.py -s 0 --max-train-iter 10000 \\
        --set policy.learn.data_path=pendulum_sac_seed0/ckpt/ckpt_last.buffer.pth.tar

Expected: from that buffer (33k transitions), best evaluations -143 / -140 / -140 within 10k learn steps (seeds 0-2,
about 2 minutes each on 2 busy CPU cores), as offline SAC's -145 / -140 / -140. From a SAC expert's deterministic
demonstrations (one action per state) it fails as SAC does (-1285 / -1388 / -1246 in 5000 learn steps): use
``pendulum_cql_config.py`` for those (``python -m tests.benchmark.bench_offline --policies edac --data FILE``;
docs/offline.md).
"""
from easydict import EasyDict

pendulum_edac_config = dict(
    exp_name='pendulum_edac_seed0',
    env=dict(
        collector_env_num=1,       # no env is stepped in training; the evaluator's envs are
        evaluator_env_num=5,
        act_scale=True,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=3,
            action_shape=1,
            n_critics=10,              # N, the paper's for MuJoCo
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            data_path=None,            # the file to learn from (required by -m offline): see above
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            discount_factor=0.99,
            auto_alpha=True,
            eta=1.0,                   # the diversity term's weight (the paper's)
            with_q_entropy=True,       # the paper's target, with SAC's entropy bonus
        ),
        eval=dict(evaluator=dict(eval_freq=500)),  # learn steps
    ),
)
main_config = EasyDict(pendulum_edac_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='edac'),
))

if __name__ == '__main__':
    # or: ding_lite -m offline -c dizoo_configs/pendulum_edac_config.py -s 0 --set policy.learn.data_path=FILE
    from entry import serial_pipeline_offline
    serial_pipeline_offline((main_config, create_config), seed=0, max_train_iter=3000)
