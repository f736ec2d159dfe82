"""Subprocess env manager as a user runs it: the tests of ``tests.envs.test_subprocess_env_manager`` that train or load
through ``entry`` (the core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import contextlib
import copy
import multiprocessing as mp
import os
import time

from easydict import EasyDict
import pytest

from entry import serial_pipeline
from tests.conftest import TINY_CREATE, TINY_PENDULUM
from tests.envs.test_subprocess_env_manager import FlakyPendulum  # noqa: F401 (registers 'flaky_pendulum')


@pytest.mark.parametrize('manager', ['subprocess', 'shared_memory'])
@pytest.mark.parametrize('failure', ['raise', 'exit', 'hang'])
def test_broken_env_is_restarted_and_training_goes_on(tmp_path, failure, manager):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / failure)
    main.env.update(failure=failure, fail_at=30)  # 20-step episodes: the second episode of each instance breaks
    main.env.manager = dict(step_timeout=1.0, retry_waiting_time=0.0)
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.env.type, create.env_manager.type = 'flaky_pendulum', manager
    main.policy.collect.collector = dict(collect_print_freq=1)
    serial_pipeline((main, create), seed=0, max_env_step=200)
    log = (tmp_path / failure / 'log' / 'collector.txt').read_text()
    restarts = [float(line.split('env_restart_count: ')[1].split()[0]) for line in log.splitlines()
                if 'env_restart_count' in line]
    assert restarts and restarts[-1] >= 2  # each of the 2 envs broke at least once, and the run reached 200 steps
    assert not mp.active_children()        # every env process is gone


def test_an_exception_in_the_run_leaves_no_env_process(tmp_path, monkeypatch):
    from policy_zoo import SACPolicy

    def broken(self, data):
        raise KeyboardInterrupt('Ctrl-C')
    monkeypatch.setattr(SACPolicy, '_forward_learn', broken)
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / 'run')
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.env_manager.type = 'subprocess'
    with pytest.raises(KeyboardInterrupt):
        serial_pipeline((main, create), seed=0, max_env_step=200)
    assert not mp.active_children()


def test_ctrl_c_at_the_cli_leaves_no_process_behind(tmp_path):
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT
    main = copy.deepcopy(TINY_PENDULUM)
    main['exp_name'] = str(tmp_path / 'run')
    main['policy']['learn']['learner']['hook']['save_ckpt_after_iter'] = 5
    create = dict(copy.deepcopy(TINY_CREATE), env_manager=dict(type='subprocess'))
    cfg = tmp_path / 'cfg.py'
    cfg.write_text(f"main_config = {main!r}\ncreate_config = {create!r}\n")
    # faulthandler: a run that does not stop is aborted below and prints where each of its threads was
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''), PYTHONFAULTHANDLER='1')
    process = subprocess.Popen([sys.executable, '-m', 'entry.cli', '-m', 'serial', '-c', str(cfg)], env=env,
                               start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / 'run' / 'ckpt' / 'latest').exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the whole process group
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        _, err = process.communicate(timeout=30)
        with contextlib.suppress(ProcessLookupError):  # env workers the aborted run left
            os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"the run did not stop within 60 s of Ctrl-C; its threads then:\n{err[-6000:]}")
    assert process.returncode == 130 and 'interrupted' in err
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):  # no env worker is left in the group
        os.killpg(process.pid, 0)
