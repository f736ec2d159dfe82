"""CQL (Kumar et al. 2020) on Pendulum-v1, offline: DI-engine's ``pendulum_cql_config`` in this project's sizes (the
zoo Pendulum SAC's), learning from a file and taking no env step.

The data is yours: a demonstration file (``ding_lite -m collect_demo``) or a run's replay buffer. For a SAC expert's
deterministic demonstrations, train the zoo SAC, let it act for 10k env steps, and learn from those::

    ding_lite -m serial -c dizoo_configs/pendulum_sac_config.py -s 0
    ding_lite -m collect_demo -c dizoo_configs/pendulum_sac_config.py -s 0 --collect-count 10000 \\
        --load-path pendulum_sac_seed0/ckpt/ckpt_best.pth.tar --expert-data-path demos.pth
    ding_lite -m offline -c dizoo_configs/pendulum_cql_config.py -s 0 --max-train-iter 5000 \\
        --set policy.learn.data_path=demos.pth

Expected: from those 10k deterministic transitions (episodes of -159), best evaluations -179 / -154 / -149 within
5000 learn steps (seeds 0-2, about 2 minutes each on 2 busy CPU cores), where offline SAC on the same file stays at
-1325 / -1382 / -1504. From the replay buffer of the zoo SAC's seed-0 run instead
(``--set policy.learn.data_path=pendulum_sac_seed0/ckpt/ckpt_last.buffer.pth.tar``, 33k transitions of a learning
agent), -252 / -334 / -384 in 10k learn steps, still rising, where SAC reaches -145 / -140 / -140: data that covers
the actions is SAC's own ground (``python -m tests.benchmark.bench_offline --policies sac cql --data FILE
--set policy.learn.min_q_weight=5.0``; docs/offline.md).
"""
from easydict import EasyDict

pendulum_cql_config = dict(
    exp_name='pendulum_cql_seed0',
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
            twin_critic=True,
            action_space='reparameterization',
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
            min_q_weight=5.0,          # DI-engine's Pendulum CQL value
            num_actions=10,
            with_lagrange=False,
            lagrange_thresh=-1.0,
            with_q_entropy=False,
        ),
        eval=dict(evaluator=dict(eval_freq=500)),  # learn steps
    ),
)
main_config = EasyDict(pendulum_cql_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='cql'),
))

if __name__ == '__main__':
    # or: ding_lite -m offline -c dizoo_configs/pendulum_cql_config.py -s 0 --set policy.learn.data_path=FILE
    from entry import serial_pipeline_offline
    serial_pipeline_offline((main_config, create_config), seed=0, max_train_iter=3000)
