"""Gymnasium env as a user runs it: the tests of ``tests.envs.test_gymnasium_env`` that train or load through ``entry``
(the core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import pytest

from envs import GymnasiumEnv
from tests.envs.test_gymnasium_env import PACKAGE


def test_envs_of_another_package_by_its_name_or_import_names_and_clear_errors(tmp_path, monkeypatch):
    """gymnasium's 'package:EnvId' imports the package; an id nobody registered says how to bring its package in; an
    env whose constructor fails names itself, its package and the error."""
    from entry import serial_pipeline
    from tests.conftest import TINY_CREATE, TINY_PENDULUM
    (tmp_path / 'toy_pkg_xyz.py').write_text(PACKAGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    main = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'toy'))
    main['env'] = dict(main['env'], env_id='toy_pkg_xyz:ToyPackaged-v0', env_kwargs=dict())
    main['policy'] = dict(main['policy'], model=dict(obs_shape=2, action_shape=1))
    serial_pipeline((main, dict(TINY_CREATE, env=dict(type='gymnasium'))), seed=0, max_train_iter=2)
    with pytest.raises(ValueError, match=r"'highway-v0'.*its package \('highway_env', pip install it\)"
                                         r".*create_config.env.import_names \(\['highway_env'\]\).*"
                                         r"'highway_env:highway-v0'"):  # (not installed here)
        GymnasiumEnv(dict(env_id='highway-v0'))
    with pytest.raises(ValueError) as unknown:
        GymnasiumEnv(dict(env_id='NoSuchThing-v0'))
    assert "`NoSuchThing` doesn't exist. An env of another package" in str(unknown.value)  # gymnasium's words, once
    with pytest.raises(ValueError, match=r"cannot make gymnasium env 'ToyPackaged-v0' \(package 'toy_pkg_xyz'.*\): "
                                         r"its constructor raised AssertionError \(no message\)"):
        GymnasiumEnv(dict(env_id='ToyPackaged-v0', env_kwargs=dict(fail=True)))
