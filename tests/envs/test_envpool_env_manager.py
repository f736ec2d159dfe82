"""The envpool env manager: sync and async stepping, resets, action scaling, evaluation, the pipelines."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from ding_lite.config import ConfigError
from envs import CartPoleEnv, GymnasiumEnv, PendulumEnv, create_env_manager

pytest.importorskip('envpool', reason="the envpool env manager needs EnvPool: pip install 'ding-lite[envpool]'")
pytestmark = pytest.mark.filterwarnings('ignore::UserWarning')  # gymnasium's float64 Box warnings in EnvPool


def _manager(n=3, env_cls=PendulumEnv, seed=0, dynamic=True, **cfg):
    env_cfg = dict(env_kwargs=dict(max_episode_steps=5))
    manager = create_env_manager(dict(type='envpool', **cfg), [functools.partial(env_cls, cfg=env_cfg)] * n)
    manager.seed(seed, dynamic_seed=dynamic)
    manager.launch()
    return manager


def test_sync_steps_every_env_and_resets_ended_episodes():
    manager = _manager()
    assert sorted(manager.ready_obs) == [0, 1, 2] and manager.ready_obs[0].dtype == np.float32
    returns = np.zeros(3)
    for step in range(5):
        timesteps = manager.step({i: np.array([0.1 * i], np.float32) for i in range(3)})
        assert sorted(timesteps) == [0, 1, 2]
        returns += [float(timesteps[i].reward) for i in range(3)]
        assert all(t.done == (step == 4) for t in timesteps.values())
    for i, timestep in timesteps.items():  # the time limit ended them: truncated, with the episode's return
        assert timestep.info['TimeLimit.truncated'] and math.isclose(timestep.info['eval_episode_return'],
                                                                   returns[i], rel_tol=1e-5)
        assert not np.array_equal(manager.ready_obs[i], timestep.obs)  # already reset: a new episode's first obs
    assert not manager.step({0: np.zeros(1), 1: np.zeros(1), 2: np.zeros(1)})[0].done
    manager.close()


@pytest.mark.parametrize('action, torque', [(0.5, 1.0), (-1.0, -2.0), (3.0, 2.0)])
def test_box_actions_are_scaled_from_minus_one_one_and_clipped(action, torque):
    """Pendulum's reward is -(theta^2 + 0.1 thetadot^2 + 0.001 torque^2) of the state it left: the torque it
    applied can be read back from the reward."""
    manager = _manager(n=1)
    cos, sin, thetadot = manager.ready_obs[0]
    reward = float(manager.step({0: np.array([action], np.float32)})[0].reward)
    expected = -(math.atan2(sin, cos) ** 2 + 0.1 * thetadot ** 2 + 0.001 * torque ** 2)
    assert reward == pytest.approx(expected, abs=1e-4)
    assert manager.action_space.low.tolist() == [-1.0] and manager.env_ref.env_id == 'Pendulum-v1'


def test_async_returns_batches_and_each_env_continues_where_it_was():
    manager = _manager(n=4, batch_size=2)
    rng = np.random.default_rng(0)
    in_flight, last, ended = set(), {}, 0
    for _ in range(40):
        ready = manager.ready_obs
        assert ready and not set(ready) & in_flight
        for env_id, obs in ready.items():  # a ready env continues from its last step (or starts a new episode)
            if env_id in last and not last[env_id].done:
                np.testing.assert_array_equal(obs, last[env_id].obs)
        timesteps = manager.step({i: rng.uniform(-1, 1, 1).astype(np.float32) for i in ready})
        in_flight |= set(ready)
        assert set(timesteps) <= in_flight and len(timesteps) <= 2 * 2
        in_flight -= set(timesteps)
        last.update(timesteps)
        ended += sum(t.done for t in timesteps.values())
    assert ended >= 4  # 5-step episodes: each env ended one at least, and came back from its reset
    manager.close()


def test_static_seeds_replay_the_same_episodes_after_each_reset():
    manager = _manager(n=2, dynamic=False, batch_size=1)  # evaluation runs sync, whatever batch_size says
    first = [manager.step({0: np.zeros(1), 1: np.zeros(1)})[0].obs for _ in range(3)]
    manager.reset()
    again = [manager.step({0: np.zeros(1), 1: np.zeros(1)})[0].obs for _ in range(3)]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    manager.close()


def test_discrete_actions_and_an_evaluation_subset():
    manager = _manager(n=2, env_cls=CartPoleEnv)
    assert manager.action_space.n == 2
    timesteps = manager.step({1: np.int64(1)})  # env 0 finished its evaluation share: only env 1 reports
    assert list(timesteps) == [1] and sorted(manager.ready_obs) == [0, 1]
    manager.close()


def test_halfcheetah_v5_runs_without_the_mujoco_package_path():
    from envs import MujocoEnv
    manager = create_env_manager(dict(type='envpool'), [functools.partial(MujocoEnv, cfg=dict(
        env_id='HalfCheetah-v3'))] * 2)  # DI-engine's gym-era id, mapped to v5
    manager.seed(0)
    manager.launch()
    assert manager.env_ref.env_id == 'HalfCheetah-v5' and manager.ready_obs[0].shape == (17,)
    assert manager.ready_obs[0].dtype == np.float32 and manager.action_space.shape == (6,)
    before = manager.ready_obs
    timesteps = manager.step({0: np.zeros(6, np.float32), 1: np.ones(6, np.float32)})
    assert sorted(timesteps) == [0, 1] and not any(t.done for t in timesteps.values())
    for i, timestep in timesteps.items():  # the simulation moved: a new float32 state, a finite reward
        assert timestep.obs.shape == (17,) and timestep.obs.dtype == np.float32 and np.isfinite(timestep.reward)
        assert not np.array_equal(timestep.obs, before[i]) and np.array_equal(manager.ready_obs[i], timestep.obs)
    manager.close()


def test_what_envpool_cannot_run_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"env.manager.batch_size=5 must be in \[1, 3\]"):
        _manager(batch_size=5)

    class Shaped(GymnasiumEnv):
        def step(self, action):
            return super().step(action)

    with pytest.raises(ConfigError, match='env type Shaped changes step or reset'):
        create_env_manager(dict(type='envpool'), [functools.partial(Shaped, cfg=dict(env_id='Pendulum-v1'))])
    with pytest.raises(ConfigError, match='its envs must be a GymnasiumEnv type'):
        create_env_manager(dict(type='envpool'), [lambda: PendulumEnv({})])
    manager = create_env_manager(dict(type='envpool'), [functools.partial(GymnasiumEnv, cfg=dict(
        env_id='NoSuchEnv-v0'))])
    with pytest.raises(ConfigError, match=r"EnvPool cannot make 'NoSuchEnv-v0'.*envpool.list_all_envs"):
        manager.launch()


def test_many_pools_step_at_once_begun_then_finished_as_one_after_another():
    """``step_batch_begin`` sends every pool's actions before any step is received (many seeds' pools step in their
    threads at once): the columns, the ended episodes' returns and the next ready observations are those of stepping
    the pools one after another; an evaluation's finished env sits out unreported."""
    def run(together):
        managers = [_manager(seed=seed) for seed in (0, 7)]
        rows = []
        for step in range(7):
            ids = [0, 2] if step == 6 else [0, 1, 2]
            actions = np.full((len(ids), 1), 0.3 * step - 1.0, np.float32)
            if together:
                finishes = [m.step_batch_begin(ids, actions) for m in managers]
                steps = [finish() for finish in finishes]
            else:
                steps = [m.step_batch(ids, actions) for m in managers]
            rows.append([(s.env_id, s.obs, s.reward, s.done, s.info, m.ready_obs_batch()[1])
                         for s, m in zip(steps, managers)])
        for m in managers:
            m.close()
        return rows
    together, apart = run(True), run(False)
    events, managers = [], [_manager(seed=seed) for seed in (0, 7)]
    for k, m in enumerate(managers):
        for name in ('send', 'recv'):
            method = getattr(m._pool, name)
            setattr(m._pool, name, lambda *a, k=k, name=name, method=method: events.append((name, k)) or method(*a))
    finishes = [m.step_batch_begin([0, 1, 2], np.zeros((3, 1), np.float32)) for m in managers]
    assert events == [('send', 0), ('send', 1)]  # both pools stepping before either is received
    [finish() for finish in finishes]
    assert events[2:] == [('recv', 0), ('recv', 1)]
    for m in managers:
        m.close()
    for got, expected in zip(together, apart):
        for (ids, obs, reward, done, info, ready), (ids2, obs2, reward2, done2, info2, ready2) in zip(got, expected):
            assert ids == ids2 and info == info2
            assert all(np.array_equal(a, b) for a, b in ((obs, obs2), (reward, reward2), (done, done2), (ready, ready2)))
    assert any(s[4] for s in together[4])  # the 5-step episodes ended there, with their returns
