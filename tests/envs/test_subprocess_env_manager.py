"""SubprocessEnvManager: same transitions as 'base', restarts of envs that raise, die or hang, clean shutdown."""
from __future__ import annotations

import multiprocessing as mp
import os
import time
from functools import partial

import numpy as np
import pytest
import torch

from ding_lite.registry import ENV_REGISTRY
from envs import BaseEnvManager, PendulumEnv, SubprocessEnvManager
from envs.subprocess_env_manager import EnvFailure


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
