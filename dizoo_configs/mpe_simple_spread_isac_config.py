"""Independent SAC with parameter sharing on MPE simple_spread (``env.type='pettingzoo_agents'``, mpe2's own env and
rewards): 3 agents, 25 cycles, continuous actions, each agent a slot of its own, one SAC for all, the agent's index
in its input (the ``marl`` extra). Env steps count each agent's step.

Expected: the team's return (mpe2's rewards summed over agents, half DI-engine's units) at 90k agent steps (30k env
steps) -48.8 / -44.1 / -47.9 (seeds 0-2; uniformly random actions -81), 105-142 s each on 2 CPU cores
(``python -m tests.benchmark.bench_zoo mpe_simple_spread_isac_config --seeds 0 1 2 --env-steps 90000``).
"""
from easydict import EasyDict

mpe_simple_spread_isac_config = dict(
    exp_name='mpe_simple_spread_isac_seed0',
    env=dict(
        env_id='mpe2.simple_spread_v3',
        env_kwargs=dict(N=3, max_cycles=25, continuous_actions=True),
        collector_env_num=4,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=0,
    ),
    policy=dict(
        random_collect_size=3000,
        model=dict(agent_id_input=True, twin_critic=True, actor_head_hidden_size=128, critic_head_hidden_size=128),
        learn=dict(
            update_per_collect=24,
            batch_size=256,
            learning_rate_q=5e-4,
            learning_rate_policy=5e-4,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=96),
        eval=dict(evaluator=dict(eval_freq=250)),  # train iterations (= 1000 agent steps here)
        other=dict(replay_buffer=dict(replay_buffer_size=int(3e5))),
    ),
)
main_config = EasyDict(mpe_simple_spread_isac_config)

create_config = EasyDict(dict(
    env=dict(type='pettingzoo_agents'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/mpe_simple_spread_isac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
