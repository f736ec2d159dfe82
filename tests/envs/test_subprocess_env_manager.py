"""SubprocessEnvManager: same transitions as 'base', restarts of envs that raise, die or hang, clean shutdown."""
from __future__ import annotations

import contextlib
import copy
import multiprocessing as mp
import os
import time
from functools import partial

import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_lite.registry import ENV_REGISTRY
from entry import serial_pipeline
from envs import BaseEnvManager, PendulumEnv, SubprocessEnvManager
from envs.subprocess_env_manager import EnvFailure
from tests.conftest import TINY_CREATE, TINY_PENDULUM


@ENV_REGISTRY.register('flaky_pendulum', force_overwrite=True)
class FlakyPendulum(PendulumEnv):
    """Pendulum whose every instance breaks on its ``fail_at``-th step (counted over its episodes): it raises,
    exits or hangs."""

    config = dict(env_id='Pendulum-v1', failure='raise', fail_at=50)

    def __init__(self, cfg=None):
        super().__init__(cfg)
        self._steps = 0

    def step(self, action):
        self._steps += 1
        if self._steps == self._cfg.fail_at:
            if self._cfg.failure == 'raise':
                raise RuntimeError('simulator exploded')
            if self._cfg.failure == 'exit':
                os._exit(7)   # a segfault-like death: no exception, no reply
            time.sleep(60)    # 'hang'
        return super().step(action)


def _rollout(manager_cls, steps: int = 120, **cfg) -> list[tuple]:
    env_fn = [partial(PendulumEnv, cfg={'env_kwargs': {'max_episode_steps': 37}}) for _ in range(3)]
    manager = manager_cls(env_fn, cfg)
    manager.seed(11)
    manager.launch()
    rng, out = np.random.default_rng(0), []
    for _ in range(steps):
        actions = {i: torch.as_tensor(rng.uniform(-1, 1, 1), dtype=torch.float32) for i in manager.ready_obs}
        for env_id, t in manager.step(actions).items():
            out.append((env_id, t.obs.tobytes(), float(t.reward), t.done, t.info.get('eval_episode_return')))
    manager.close()
    return out


@pytest.mark.parametrize('shared_memory', [True, False])
def test_same_transitions_as_base(shared_memory):
    assert _rollout(SubprocessEnvManager, shared_memory=shared_memory) == _rollout(BaseEnvManager)


@pytest.mark.parametrize('failure', ['raise', 'exit', 'hang'])
def test_broken_env_is_restarted_and_training_goes_on(tmp_path, failure):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / failure)
    main.env.update(failure=failure, fail_at=30)  # 20-step episodes: the second episode of each instance breaks
    main.env.manager = dict(step_timeout=1.0, retry_waiting_time=0.0)
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.env.type, create.env_manager.type = 'flaky_pendulum', 'subprocess'
    main.policy.collect.collector = dict(collect_print_freq=1)
    serial_pipeline((main, create), seed=0, max_env_step=200)
    log = (tmp_path / failure / 'log' / 'collector.txt').read_text()
    restarts = [float(line.split('env_restart_count: ')[1].split()[0]) for line in log.splitlines()
                if 'env_restart_count' in line]
    assert restarts and restarts[-1] >= 2  # each of the 2 envs broke at least once, and the run reached 200 steps
    assert not mp.active_children()        # every env process is gone


def test_no_transition_crosses_a_restart():
    env_fn = [partial(FlakyPendulum, cfg={'fail_at': 5, 'env_kwargs': {'max_episode_steps': 200}})]
    manager = SubprocessEnvManager(env_fn, {'retry_waiting_time': 0.0})
    manager.seed(0)
    manager.launch()
    timesteps = [manager.step({0: torch.zeros(1)})[0] for _ in range(5)]
    assert [t.info.get('abnormal', False) for t in timesteps] == [False] * 4 + [True]
    assert timesteps[-1].done and timesteps[-1].obs is None and 'simulator exploded' in timesteps[-1].info['error']
    assert manager.restarts == 1 and 0 in manager.ready_obs  # a fresh episode waits for an action
    manager.close()


def test_too_many_failures_in_a_row_name_the_env_and_its_error():
    env_fn = [partial(PendulumEnv, cfg={}), partial(FlakyPendulum, cfg={'fail_at': 1})]
    manager = SubprocessEnvManager(env_fn, {'max_retry': 2, 'retry_waiting_time': 0.0})
    manager.launch()
    with pytest.raises(EnvFailure, match=r'env 1 failed 3 times in a row \(max_retry=2\); last error: '
                                         r'RuntimeError: simulator exploded'):
        for _ in range(5):
            manager.step({i: torch.zeros(1) for i in manager.ready_obs})
    manager.close()
    assert not mp.active_children()


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


_PARENT = os.getpid()


class SlowToBuild(PendulumEnv):
    """Pendulum that takes a second to build in an env process (a big simulator loading)."""

    def __init__(self, cfg=None):
        if os.getpid() != _PARENT:
            time.sleep(1.0)
        super().__init__(cfg)


@pytest.mark.parametrize('connect_timeout', [5.0, 0.3])
def test_a_new_env_process_has_connect_timeout_for_its_first_answer(connect_timeout):
    manager = SubprocessEnvManager([partial(SlowToBuild, cfg={})], dict(reset_timeout=0.3, max_retry=0,
                                                                        connect_timeout=connect_timeout))
    manager.seed(0)
    try:
        if connect_timeout > 1.0:
            manager.launch()
            assert list(manager.ready_obs) == [0]
        else:
            with pytest.raises(EnvFailure, match='within 0.3 s'):
                manager.launch()
    finally:
        manager.close()
