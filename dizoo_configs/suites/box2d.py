"""Box2D at short budgets: ``ding_lite bench --suite dizoo_configs/suites/box2d.py --seeds 0-4`` (the ``box2d`` extra).

The budgets are the zoo configs' own (their docstrings give the results measured at them). No reference scores:
rl-zoo's and the papers' tables report these envs at 300k-1M steps; an entry takes ``reference=dict(score=...,
source=...)`` where a table at the same budget exists.
"""
suite = [
    dict(config='../lunarlander_continuous_sac_config.py', max_env_step=200000),
    dict(config='../lunarlander_discrete_sac_config.py', max_env_step=200000),
    dict(config='../bipedalwalker_sac_config.py', max_env_step=200000),
]
