"""Discrete MASAC (DI-engine's, ``policy.multi_agent=True``) on MPE simple_spread: 3 agents, 3 landmarks, 25 cycles
(the task's standard setting; the ``marl`` extra), DI-engine's env and team reward (``pettingzoo_team``, DI-engine's ``petting_zoo``).

Expected: the team's return (DI-engine's units) at 30k env steps -120 / -122 / -117 (best -115 / -117 / -115;
seeds 0-2; uniformly random actions -161), 86-101 s each on 2 CPU cores
(``python -m tests.benchmark.bench_zoo mpe_simple_spread_masac_config --seeds 0 1 2 --env-steps 30000``).
"""
from easydict import EasyDict

mpe_simple_spread_masac_config = dict(
    exp_name='mpe_simple_spread_masac_seed0',
    env=dict(
        env_family='mpe',
        env_id='simple_spread_v3',
        n_agent=3,
        n_landmark=3,
        max_cycles=25,
        collector_env_num=4,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=0,
    ),
    policy=dict(
        multi_agent=True,
        random_collect_size=0,
        model=dict(twin_critic=True, actor_head_hidden_size=128, critic_head_hidden_size=128),
        learn=dict(
            update_per_collect=25,
            batch_size=256,
            learning_rate_q=5e-4,
            learning_rate_policy=5e-4,
            learning_rate_alpha=5e-5,
        ),
        collect=dict(n_sample=100),
        eval=dict(evaluator=dict(eval_freq=250)),  # train iterations (= 1000 env steps here)
        other=dict(
            eps=dict(type='linear', start=1.0, end=0.05, decay=20000),  # env steps
            replay_buffer=dict(replay_buffer_size=int(1e5)),
        ),
    ),
)
main_config = EasyDict(mpe_simple_spread_masac_config)

create_config = EasyDict(dict(
    env=dict(type='pettingzoo_team'),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/mpe_simple_spread_masac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
