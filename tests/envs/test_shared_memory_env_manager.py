"""SharedMemoryEnvManager: the transitions of 'base' through both step paths and every kind of space, restarts of
workers whose envs raise, die or hang, refused settings, clean shutdown."""
from __future__ import annotations

import multiprocessing as mp
from functools import partial

import numpy as np
import pytest
import torch

from ding_lite.utils.default_config import ConfigError
from envs import (BaseEnvManager, CartPoleEnv, MujocoEnv, PendulumEnv, PendulumSplitEnv, PointGoalEnv,
                  SharedMemoryEnvManager)
from envs.subprocess_env_manager import EnvFailure
from tests.envs.test_subprocess_env_manager import FlakyPendulum

_SHORT = {'env_kwargs': {'max_episode_steps': 37}}


def _rows(manager_cls, env_cls=PendulumEnv, cfg=_SHORT, batch=False, steps=120, **manager_cfg) -> list[tuple]:
    """Every env's timesteps over ``steps`` steps of random actions (3 envs; 2 workers: groups of 2 and 1)."""
    manager = manager_cls([partial(env_cls, cfg=cfg) for _ in range(3)], manager_cfg)
    manager.seed(11)
    manager.launch()
    space, rng, out = manager.action_space, np.random.default_rng(0), []
    discrete = not hasattr(space, 'low')
    for _ in range(steps):
        ids = list(manager.ready_obs)[::-1]  # not in worker order
        actions = rng.integers(0, space.n, len(ids)) if discrete else \
            rng.uniform(space.low, space.high, (len(ids),) + space.shape).astype(np.float32)
        if batch:
            step = manager.step_batch(ids, actions)
            for k, i in enumerate(step.env_id):
                info = (step.info or {}).get(i, {})
                out.append((i, _bytes(step.obs[k]), step.reward[k].tolist(), bool(step.done[k]),
                            bool(step.terminated[k]), _listed(info.get('eval_episode_return'))))
        else:
            for i, t in manager.step({i: torch.as_tensor(a) for i, a in zip(ids, actions)}).items():
                out.append((i, _bytes(t.obs), np.asarray(t.reward).tolist(), bool(t.done),
                            _listed(t.info.get('eval_episode_return'))))
    manager.close()
    return out


def _listed(value):
    return None if value is None else np.asarray(value).tolist()


def _bytes(obs) -> bytes:
    if isinstance(obs, dict):
        return b''.join(np.asarray(obs[k]).tobytes() for k in sorted(obs))
    return np.asarray(obs).tobytes()


@pytest.mark.parametrize('env_cls, batch', [(PendulumEnv, False), (PendulumEnv, True), (CartPoleEnv, True),
                                            (PointGoalEnv, False), (PendulumSplitEnv, False), (PendulumSplitEnv, True)],
                         ids=['box', 'box_batch', 'discrete_batch', 'dict_obs', 'vector_reward', 'vector_reward_batch'])
def test_same_transitions_as_base(env_cls, batch):
    """Box and Discrete spaces through the shared columns; Dict observations and vector rewards pickled."""
    cfg = _SHORT if env_cls is not PointGoalEnv else {}
    shared = _rows(SharedMemoryEnvManager, env_cls, cfg, batch, worker_num=2)
    assert shared == _rows(BaseEnvManager, env_cls, cfg, batch)
    assert any(row[3] for row in shared)  # episodes ended (and reset) on the way


def test_a_step_of_box_envs_pickles_nothing(monkeypatch):
    """MuJoCo's float64 space, float32 observations: a step of envs whose episodes go on is the shared columns
    alone (no reply to unpickle)."""
    import envs.shared_memory_env_manager as module
    manager = SharedMemoryEnvManager([partial(MujocoEnv, cfg={'env_id': 'HalfCheetah-v5'}) for _ in range(2)],
                                     {'worker_num': 2})
    manager.seed(0)
    manager.launch()
    loads = []
    monkeypatch.setattr(module.pickle, 'loads', lambda data: loads.append(data))
    step = manager.step_batch([0, 1], np.zeros((2, 6), np.float32))
    unpickled = len(loads)
    manager.close()
    assert step.obs.shape == (2, 17) and step.obs.dtype == np.float32 and unpickled == 0


@pytest.mark.parametrize('spin_wait', [0.0, 0.001])
def test_workers_that_sleep_or_spin_step_alike(spin_wait):
    """Workers that sleep on their pipe between steps (``spin_wait=0``) and workers that spin: the same steps."""
    assert _rows(SharedMemoryEnvManager, batch=True, steps=40, worker_num=2, spin_wait=spin_wait) == \
        _rows(BaseEnvManager, batch=True, steps=40)


@pytest.mark.parametrize('failure', ['raise', 'exit', 'hang'])
def test_a_failed_worker_is_restarted_and_no_transition_crosses_it(failure):
    """Env 0 breaks on its 5th step; its worker (envs 0 and 1) starts again: both steps come back abnormal (no rows,
    ``restarted``), new episodes wait, and env 2's worker goes on."""
    env_fn = [partial(FlakyPendulum, cfg={'fail_at': 5 if i == 0 else 10**9, 'failure': failure}) for i in range(3)]
    manager = SharedMemoryEnvManager(env_fn, {'worker_num': 2, 'retry_waiting_time': 0.0, 'step_timeout': 1.0})
    manager.seed(0)
    manager.launch()
    steps = [manager.step_batch([0, 1, 2], np.zeros((3, 1), np.float32)) for _ in range(5)]
    assert [s.restarted for s in steps] == [[]] * 4 + [[0, 1]]
    assert steps[-1].env_id == [2] and steps[-1].obs.shape == (1, 3)
    assert manager.restarts == 2 and sorted(manager.ready_obs) == [0, 1, 2]
    assert manager.step_batch([0, 1, 2], np.zeros((3, 1), np.float32)).env_id == [0, 1, 2]
    manager.close()
    assert not mp.active_children()


def test_a_ready_env_of_a_restarted_worker_outside_the_step_is_reported():
    env_fn = [partial(FlakyPendulum, cfg={'fail_at': 3 if i == 0 else 10**9}) for i in range(2)]
    manager = SharedMemoryEnvManager(env_fn, {'worker_num': 1, 'retry_waiting_time': 0.0})
    manager.seed(0)
    manager.launch()
    for _ in range(2):
        manager.step_batch([0, 1], np.zeros((2, 1), np.float32))
    step = manager.step_batch([0], np.zeros((1, 1), np.float32))  # env 1 waits; its env is rebuilt with env 0's
    assert step.restarted == [0, 1] and step.env_id == []
    manager.close()


def test_too_many_failures_in_a_row_name_the_envs_and_the_error():
    env_fn = [partial(PendulumEnv, cfg={}), partial(FlakyPendulum, cfg={'fail_at': 1})]
    manager = SharedMemoryEnvManager(env_fn, {'worker_num': 2, 'max_retry': 2, 'retry_waiting_time': 0.0})
    manager.launch()
    with pytest.raises(EnvFailure, match=r'the worker of envs \[1\] failed 3 times in a row \(max_retry=2\); '
                                         r'last error: RuntimeError: simulator exploded'):
        for _ in range(5):
            manager.step({i: torch.zeros(1) for i in manager.ready_obs})
    manager.close()
    assert not mp.active_children()


def test_the_resume_state_replays_into_a_new_manager():
    """``state_dict`` mid-episode, loaded into a new manager: the same next steps as the first manager's."""
    def make():
        manager = SharedMemoryEnvManager([partial(PendulumEnv, cfg={}) for _ in range(2)], {'worker_num': 2})
        manager.seed(5)
        manager.launch()
        return manager
    first, actions = make(), np.full((2, 1), 0.3, np.float32)
    for _ in range(7):
        first.step_batch([0, 1], actions)
    second = make()
    second.load_state_dict(first.state_dict())
    a, b = first.step_batch([0, 1], actions), second.step_batch([0, 1], actions)
    assert np.array_equal(a.obs, b.obs) and np.array_equal(a.reward, b.reward)
    first.close()
    second.close()


@pytest.mark.parametrize('key, value', [('worker_num', 0), ('worker_num', 1.5), ('spin_wait', -1),
                                        ('spin_wait', '1ms')])
def test_bad_settings_are_refused_by_name(key, value):
    with pytest.raises(ConfigError, match=f'env.manager.{key}='):
        SharedMemoryEnvManager([partial(PendulumEnv, cfg={})], {key: value})


@pytest.mark.parametrize('cores, spin_us', [(64, 1000), (1, 0)])
def test_workers_spin_only_while_every_worker_has_a_core(monkeypatch, cores, spin_us):
    import envs.shared_memory_env_manager as module
    monkeypatch.setattr(module, '_CORES', cores)
    live = SharedMemoryEnvManager._live
    manager = SharedMemoryEnvManager([partial(PendulumEnv, cfg={}) for _ in range(2)], {'worker_num': 2})
    manager.launch()
    step = manager.step_batch([0, 1], np.zeros((2, 1), np.float32))
    spin = int(manager._link.spin_us[0])
    manager.close()
    assert step.env_id == [0, 1] and spin == spin_us and SharedMemoryEnvManager._live == live
