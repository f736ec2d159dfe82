"""Discrete SAC on LunarLander-v3 (the ``box2d`` extra): 8 envs, 16 learn steps per 256 transitions.

Expected: 200 not reached within a budget of 200k env steps: best evaluations 159 / -9 / -17
(seeds 0-2), 55-60 s each on 2 CPU cores
(``python -m tests.benchmark.bench_zoo lunarlander_discrete_sac_config --seeds 0 1 2 --env-steps 200000``). Discrete
SAC is slow on LunarLander at this budget; docs/configs.md gives the target-entropy ratios tried.
"""
from easydict import EasyDict

lunarlander_discrete_sac_config = dict(
    exp_name='lunarlander_discrete_sac_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=200,
    ),
    policy=dict(
        random_collect_size=0,
        model=dict(obs_shape=8, action_shape=4, twin_critic=True, actor_head_hidden_size=128,
                   critic_head_hidden_size=128),
        learn=dict(
            update_per_collect=16,
            batch_size=128,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=256),
        eval=dict(evaluator=dict(eval_freq=200)),  # train iterations (= 3200 env steps here)
        other=dict(
            eps=dict(type='exp', start=1.0, end=0.05, decay=20000),  # env steps
            replay_buffer=dict(replay_buffer_size=int(1e5)),
        ),
    ),
)
main_config = EasyDict(lunarlander_discrete_sac_config)

create_config = EasyDict(dict(
    env=dict(type='lunarlander'),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/lunarlander_discrete_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
