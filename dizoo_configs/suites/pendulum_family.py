"""The SAC family on Pendulum-v1: ``ding_lite bench --suite dizoo_configs/suites/pendulum_family.py --seeds 0-4``.

Each entry is a zoo config at a budget past the point where its docstring says it reaches -250 (BENCHMARKS.md has
the suite's measured table). No reference scores: rl-zoo's and the papers' Pendulum-v1 rows use other budgets and
network sizes; an entry takes ``reference=dict(score=..., source=...)`` where a table at the same budget exists.
"""
suite = [
    dict(config='../pendulum_sac_config.py', max_env_step=40000),
    dict(config='../pendulum_sac_v1_config.py', max_env_step=8000),
    dict(config='../pendulum_tqc_config.py', max_env_step=8000),
    dict(config='../pendulum_redq_config.py', max_env_step=4000),
    dict(config='../pendulum_droq_config.py', max_env_step=4000),
    dict(config='../pendulum_crossq_config.py', max_env_step=8000),
    dict(config='../pendulum_simba_config.py', max_env_step=6000),
    dict(config='../pendulum_simba_v2_config.py', max_env_step=6000),
]
