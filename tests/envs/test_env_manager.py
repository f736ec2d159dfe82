from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from envs import BaseEnvManager, PendulumEnv, create_env_manager, get_vec_env_setting


def _manager(n=3, steps=4, **cfg):
    return BaseEnvManager([partial(PendulumEnv, {'env_kwargs': {'max_episode_steps': steps}})] * n, cfg)


def test_step_all_and_auto_reset():
    manager = _manager()
    manager.seed(0)
    manager.launch()
    assert sorted(manager.ready_obs) == [0, 1, 2]
    for step in range(4):
        timesteps = manager.step({i: np.zeros(1, np.float32) for i in manager.ready_obs})
        assert all(t.done == (step == 3) for t in timesteps.values())
    assert sorted(manager.ready_obs) == [0, 1, 2]                 # reset automatically
    assert not manager.done
    manager.close()


def test_episode_num_limits_and_done():
    manager = _manager(n=2, steps=2, episode_num=1)
    manager.launch()
    manager.step({0: np.zeros(1), 1: np.zeros(1)})
    manager.step({0: np.zeros(1), 1: np.zeros(1)})
    assert manager.ready_obs == {} and manager.done
    with pytest.raises(ValueError, match='env 0 is not ready'):
        manager.step({0: np.zeros(1)})


def test_seed_gives_each_env_its_own_seed_and_reset_repeats():
    manager = _manager(n=2)
    manager.seed(5, dynamic_seed=False)
    manager.launch()
    first = manager.ready_obs
    assert not np.allclose(first[0], first[1])
    manager.reset()
    np.testing.assert_array_equal(manager.ready_obs[0], first[0])  # evaluations replay the same starts


class FlakyEnv(PendulumEnv):
    failures = 0

    def reset(self):
        if FlakyEnv.failures < 1:
            FlakyEnv.failures += 1
            raise OSError('simulator crashed')
        return super().reset()


def test_crashing_reset_is_rebuilt_and_retried():
    manager = BaseEnvManager([FlakyEnv], {'max_retry': 1})
    manager.launch()
    assert list(manager.ready_obs) == [0] and FlakyEnv.failures == 1
    FlakyEnv.failures = -5  # now fails more often than retries allow
    manager._cfg.max_retry = 0
    with pytest.raises(RuntimeError, match=r'env 0 failed to reset after 1 tries \(max_retry=0\); last error: simulator crashed'):
        manager.reset()


def test_create_and_vec_setting():
    env_cls, collector_cfgs, evaluator_cfgs = get_vec_env_setting(
        {'type': 'pendulum', 'collector_env_num': 4, 'evaluator_env_num': 2})
    assert env_cls is PendulumEnv and len(collector_cfgs) == 4 and len(evaluator_cfgs) == 2
    manager = create_env_manager({'type': 'base'}, [partial(env_cls, c) for c in evaluator_cfgs])
    assert isinstance(manager, BaseEnvManager) and manager.env_num == 2
    assert manager.action_space.shape == (1,)


def test_static_seeds_give_each_episode_of_an_evaluation_its_own_start():
    seeds = []

    class Recording(PendulumEnv):
        def seed(self, seed, dynamic_seed=True):
            seeds.append(seed)
            super().seed(seed, dynamic_seed)

    manager = BaseEnvManager([partial(Recording, {'env_kwargs': {'max_episode_steps': 2}})] * 2)
    manager.seed(10, dynamic_seed=False)
    manager.launch()
    seeds.clear()
    for _ in range(4):                                            # two episodes per env
        manager.step({i: np.zeros(1, np.float32) for i in manager.ready_obs})
    assert seeds == [12, 13, 14, 15]                              # env i, episode k: 10 + i + 2k
    seeds.clear()
    manager.reset()                                               # the next evaluation: the same starts again
    assert seeds[-2:] == [10, 11]


def test_a_resumed_manager_replays_each_envs_actions_since_its_reset():
    manager = _manager(n=3, steps=50)
    manager.seed(0)
    manager.launch()
    rng = np.random.default_rng(0)
    for step in range(420):                                       # several episodes
        ids = [0, 1, 2] if step % 3 else [0, 2]                   # env 1 sits out some steps
        manager.step_batch(ids, rng.uniform(-1, 1, (len(ids), 1)).astype(np.float32))
    manager.step({1: np.float32([0.5])})                          # and one step of one env on its own
    state = manager.state_dict()
    lengths = {i: len(s['actions']) for i, s in state['envs'].items()}
    assert lengths == {0: 420 % 50, 1: (280 + 1) % 50, 2: 420 % 50}  # steps since each env's last reset
    resumed = _manager(n=3, steps=50)
    resumed.load_state_dict(state)
    for env_id, obs in manager.ready_obs.items():
        np.testing.assert_array_equal(resumed.ready_obs[env_id], obs)
