"""SAC on HalfCheetah-v5 (the ``mujoco`` extra, or ``envpool`` with ``env_manager=dict(type='envpool')``), with DI-engine's
MuJoCo SAC hyperparameters: one env, one learn step per env step, hidden 256.

Expected: best evaluation 5332 (at 90k env steps; 4590 at 50k) at a budget of 100k env steps, seed 0 only (what 2 CPU
cores allow: 11 minutes at one learn step per env step; MuJoCo SAC is usually quoted at 1-3M steps, so this is a check
that it learns, not a final score) (``python -m tests.benchmark.bench_zoo halfcheetah_sac_config --env-steps 100000``,
or ``ding_lite -m serial -c dizoo_configs/halfcheetah_sac_config.py -s N``).
"""
from easydict import EasyDict

halfcheetah_sac_config = dict(
    exp_name='halfcheetah_sac_seed0',
    env=dict(
        env_id='HalfCheetah-v5',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=12000,
    ),
    policy=dict(
        random_collect_size=10000,
        model=dict(obs_shape=17, action_shape=6, twin_critic=True, actor_head_hidden_size=256,
                   critic_head_hidden_size=256),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
        ),
        # on a GPU learner, collect from a weight snapshot while the update runs (a CPU run keeps the strict order)
        collect=dict(n_sample=1, overlap='auto'),
        eval=dict(evaluator=dict(eval_freq=10000)),  # train iterations (= env steps here)
        other=dict(replay_buffer=dict(replay_buffer_size=int(1e6))),
    ),
)
main_config = EasyDict(halfcheetah_sac_config)

create_config = EasyDict(dict(
    env=dict(type='mujoco'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/halfcheetah_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
