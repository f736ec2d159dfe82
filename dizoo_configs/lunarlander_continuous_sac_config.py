"""SAC on LunarLanderContinuous-v3 (the ``box2d`` extra), with DI-engine's LunarLander SAC hyperparameters.

Expected: 200 reached at 46.9k / 149.3k / 196.4k env steps (seeds 0-2; budget 200k env steps,
best evaluations 209 / 246 / 208); seed 0 took 86 s on 2 CPU cores
(``python -m tests.benchmark.bench_zoo lunarlander_continuous_sac_config --seeds 0 1 2 --env-steps 200000``, or
``ding_lite -m serial -c dizoo_configs/lunarlander_continuous_sac_config.py -s N``).
"""
from easydict import EasyDict

lunarlander_continuous_sac_config = dict(
    exp_name='lunarlander_continuous_sac_seed0',
    env=dict(
        env_id='LunarLanderContinuous-v3',
        collector_env_num=4,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=200,
    ),
    policy=dict(
        random_collect_size=10000,
        model=dict(obs_shape=8, action_shape=2, twin_critic=True),
        learn=dict(
            update_per_collect=256,    # one learn step per env step
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=256),
        eval=dict(evaluator=dict(eval_freq=2000)),  # train iterations (= env steps here)
        other=dict(replay_buffer=dict(replay_buffer_size=int(1e5))),
    ),
)
main_config = EasyDict(lunarlander_continuous_sac_config)

create_config = EasyDict(dict(
    env=dict(type='lunarlander'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/lunarlander_continuous_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
