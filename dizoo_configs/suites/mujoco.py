"""MuJoCo at short budgets: ``ding_lite bench --suite dizoo_configs/suites/mujoco.py --seeds 0-4`` (the ``mujoco``
extra); on a cluster, ``--ray``: each config's seeds are one task.

100k env steps each, what the zoo configs' docstrings measure (MuJoCo SAC is usually quoted at 1-3M steps: a check
that they learn, not final scores). No reference scores at this budget; an entry takes ``reference=dict(score=...,
source=...)`` where a table at the same budget exists.
"""
suite = [
    dict(config='../halfcheetah_sac_config.py', max_env_step=100000),
    dict(config='../halfcheetah_tqc_config.py', max_env_step=100000),
    dict(config='../halfcheetah_crossq_config.py', max_env_step=100000),
    dict(config='../hopper_sac_config.py', max_env_step=100000),
    dict(config='../walker2d_sac_config.py', max_env_step=100000),
]
