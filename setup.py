from setuptools import find_packages, setup

setup(
    name='ding-lite',
    version='0.1.0',
    description='A registry-based reinforcement-learning framework centred on the Soft Actor-Critic family',
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    python_requires='>=3.9',
    packages=find_packages(include=['ding_lite*', 'policy_zoo*', 'envs*', 'entry*', 'dizoo_configs*']),
    install_requires=[
        'torch>=2.1',  # a range, never a pin: install the local torch build first (see the Makefile)
        'numpy',
        'gymnasium>=1.0',
        'easydict',
        'tensorboardX',
        'DI-treetensor',  # imports as `treetensor`; the PyPI package named `treetensor` is unrelated
        'tqdm',
    ],
    extras_require={
        'test': ['pytest', 'pytest-xdist', 'pytest-timeout'],
        'parallel': ['ray[default]'],  # default: the dashboard's job server (ray job submit) and state API
        'plot': ['matplotlib'],
        'mujoco': ['gymnasium[mujoco]'],
        'box2d': ['gymnasium[box2d]'],
        'envpool': ['envpool'],
        'minigrid': ['minigrid'],  # dizoo_configs/minigrid_empty_discrete_sac_config.py
        'video': ['moviepy'],  # eval --replay-path (gymnasium's RecordVideo)
        'track': ['wandb'],    # logger.wandb / --track (Weights & Biases)
        'tune': ['optuna'],    # ding_lite tune (hyperparameter search)
        'marl': ['pettingzoo>=1.24', 'mpe2'],  # many agents: env.type='pettingzoo_agents' (and MPE's tasks)
        'docs': ['mkdocs-material', 'mkdocstrings[python]'],  # make docs: the site from docs/ (mkdocs.yml)
        'bench': ['sb3-contrib'],  # bench_learn's peer rows (TQC, CrossQ); benchmarks only, never imported at runtime
    },
    entry_points={'console_scripts': ['ding_lite=entry.cli:main']},
)
