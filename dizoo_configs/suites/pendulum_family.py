"""The SAC family on Pendulum-v1: ``ding_lite bench --suite dizoo_configs/suites/pendulum_family.py --seeds 0-4``.

Each entry is a zoo config at its budget; ``reference`` is the result its docstring states for the same budget (this
project's own measurement; rl-zoo's Pendulum-v1 rows use other budgets and network sizes).
"""
suite = [
    dict(config='../pendulum_sac_config.py', max_env_step=40000,
         reference=dict(score=-150, source='dizoo_configs/pendulum_sac_config.py: -250 by 30-34k env steps')),
    dict(config='../pendulum_sac_v1_config.py', max_env_step=10000),
    dict(config='../pendulum_tqc_config.py', max_env_step=10000),
    dict(config='../pendulum_redq_config.py', max_env_step=5000),
    dict(config='../pendulum_droq_config.py', max_env_step=5000),
    dict(config='../pendulum_crossq_config.py', max_env_step=10000),
]
