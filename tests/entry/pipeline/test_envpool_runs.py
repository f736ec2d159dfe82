"""Envpool env manager as a user runs it: the tests of ``tests.envs.test_envpool_env_manager`` that train or load
through ``entry`` (the core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import copy

from easydict import EasyDict
import pytest

from tests.conftest import TINY_CREATE, TINY_PENDULUM

pytest.importorskip('envpool', reason="the envpool env manager needs EnvPool: pip install 'ding-lite[envpool]'")
pytestmark = pytest.mark.filterwarnings('ignore::UserWarning')  # gymnasium's float64 Box warnings in EnvPool


@pytest.mark.parametrize('batch_size', [None, 2])
def test_serial_pipeline_trains_and_evaluates_through_envpool(tmp_path, batch_size):
    from entry import serial_pipeline
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name, main.env.collector_env_num = str(tmp_path / 'exp'), 4
    main.env.manager = dict(batch_size=batch_size)
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.env_manager.type = 'envpool'
    serial_pipeline((main, create), seed=0, max_env_step=200)
    rows = (tmp_path / 'exp' / 'log' / 'evaluator.csv').read_text().splitlines()[1:]
    assert len(rows) >= 3 and int(rows[-1].split(',')[1]) >= 160
