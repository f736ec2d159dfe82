"""Discrete sac as a user runs it: the tests of ``tests.policy_zoo.test_discrete_sac`` that train or load through
``entry`` (the core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

from entry import serial_pipeline
from policy_zoo import DiscreteSACPolicy
from tests.conftest import first_envstep_reaching, zoo_config
from tests.policy_zoo.test_discrete_sac import DI_ENGINE_CARTPOLE_SAC


def test_di_engine_cartpole_config_runs_unchanged(tmp_path, monkeypatch):
    """DI-engine's cartpole_sac_config.py: only import_names removed and the policy type set to discrete_sac."""
    (tmp_path / 'cartpole_sac_config.py').write_text(DI_ENGINE_CARTPOLE_SAC)
    monkeypatch.chdir(tmp_path)
    policy = serial_pipeline(str(tmp_path / 'cartpole_sac_config.py'), seed=0, max_env_step=600)
    assert isinstance(policy, DiscreteSACPolicy) and policy._cfg.other.eps.decay == 50000
    assert (tmp_path / 'default_experiment' / 'log' / 'evaluator.csv').is_file()  # the config names no exp_name


def test_cartpole_discrete_sac_reaches_195_within_100k_env_steps(tmp_path):
    """Seeds 0-4 took 64k / 57.6k / 51.2k / 51.2k / 51.2k env steps."""
    main, create = zoo_config('cartpole_discrete_sac_config', tmp_path / 'cartpole')
    serial_pipeline((main, create), seed=0, max_env_step=100_000)
    steps = first_envstep_reaching(tmp_path / 'cartpole' / 'log' / 'evaluator.csv', 195)
    assert steps is not None and steps <= 100_000
