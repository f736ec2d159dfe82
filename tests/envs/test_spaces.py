"""Any gymnasium env from the config: observation spaces adapted, shapes read from the env, unusable spaces and bad
env keys refused before any env step is collected, wrappers from the config, the buffer's memory checked."""
from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

from ding_lite.config import ConfigError
from ding_lite.data import ReplayBuffer
from ding_lite.registry import ENV_REGISTRY
from envs import BaseEnv, BaseEnvTimestep, GymnasiumEnv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = (36, 36)  # the smallest that DI-engine's three conv layers take


class SpacesEnv(gym.Env):
    """A point on [-1, 1] pushed towards 0 (reward -|x|, 12 steps), observed through the space ``obs`` names and
    pushed through the action space ``action`` names. Records every action it is given (``ACTIONS``)."""

    ACTIONS: list = []
    STEPS = [0]

    def __init__(self, obs: str = 'box', action: str = 'box') -> None:
        self._kind, self._t, self._x = obs, 0, 0.0
        image = {'hwc': IMAGE + (3,), 'chw': (3,) + IMAGE}.get(obs)
        self.observation_space = {
            'box': gym.spaces.Box(-1, 1, (1,), np.float32),
            'box2d': gym.spaces.Box(-1, 1, (5, 5), np.float32),
            'dict': gym.spaces.Dict({'pos': gym.spaces.Box(-1, 1, (1,), np.float32), 'phase': gym.spaces.Discrete(3)}),
            'discrete': gym.spaces.Discrete(5),
            'text': gym.spaces.Text(8),
            'graph': gym.spaces.Graph(gym.spaces.Box(-1, 1, (2,), np.float32), None),
            'mission': gym.spaces.Dict({'image': gym.spaces.Box(0, 255, (16, 16, 3), np.uint8),
                                        'pos': gym.spaces.Box(-1, 1, (1,), np.float32),
                                        'mission': gym.spaces.Text(20)}),
        }.get(obs) or gym.spaces.Box(0, 255, image, np.uint8)
        self.action_space = {'box': gym.spaces.Box(-1, 1, (1,), np.float32),
                             'asym': gym.spaces.Box(np.array([2.0], np.float32), np.array([5.0], np.float32)),
                             'multidiscrete': gym.spaces.MultiDiscrete([3, 3])}[action]

    def _obs(self):
        if self._kind == 'box2d':
            return np.full((5, 5), self._x, np.float32)
        if self._kind == 'dict':
            return {'pos': np.array([self._x], np.float32), 'phase': self._t % 3}
        if self._kind == 'mission':  # MiniGrid's kind: an image, a vector and the mission in words
            image = np.zeros((16, 16, 3), np.uint8)
            image[8, int((self._x + 1) * 7.5)] = 255
            return {'image': image, 'pos': np.array([self._x], np.float32), 'mission': 'reach zero'}
        if self._kind == 'discrete':
            return int(round((self._x + 1) * 2))
        if self._kind in ('hwc', 'chw'):
            image = np.zeros(IMAGE + (3,), np.uint8)
            image[:, int((self._x + 1) / 2 * (IMAGE[1] - 1))] = 255
            return image if self._kind == 'hwc' else image.transpose(2, 0, 1).copy()
        return np.array([self._x], np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self._x, self._t = float(self.np_random.uniform(-1, 1)), 0
        return self._obs(), {}

    def step(self, action):
        SpacesEnv.ACTIONS.append(np.array(action, dtype=np.float64))
        SpacesEnv.STEPS[0] += 1
        push = float(np.asarray(action, np.float64).reshape(-1)[0])
        if isinstance(self.action_space, gym.spaces.Box) and self.action_space.low[0] > 0:
            push = (push - 3.5) / 1.5  # [2, 5] -> [-1, 1]
        self._x, self._t = float(np.clip(self._x + 0.3 * push, -1, 1)), self._t + 1
        return self._obs(), -abs(self._x), False, self._t >= 12, {}


gym.register('SpacesTest-v0', entry_point=SpacesEnv)


def _cfg(tmp_path, obs='box', action='box', manager='base', **model):
    main = dict(
        exp_name=str(tmp_path / f'{obs}_{action}_{manager}'),
        env=dict(env_id='SpacesTest-v0', env_kwargs=dict(obs=obs, action=action), collector_env_num=2,
                 evaluator_env_num=1, n_evaluator_episode=1),
        policy=dict(random_collect_size=48, model=dict(actor_head_hidden_size=16, critic_head_hidden_size=16, **model),
                    learn=dict(batch_size=16), collect=dict(n_sample=16), eval=dict(evaluator=dict(eval_freq=4)),
                    other=dict(replay_buffer=dict(replay_buffer_size=1000))))
    if obs in ('hwc', 'chw'):
        main['policy']['model']['encoder_hidden_size_list'] = [8, 8, 8, 16]
    return EasyDict(main), EasyDict(env=dict(type='gymnasium'), env_manager=dict(type=manager),
                                    policy=dict(type='sac'))


@ENV_REGISTRY.register('dict_obs_test', force_overwrite=True)
class DictObsEnv(BaseEnv):
    """A user's BaseEnv with a Dict observation (adapted by ``AdaptedEnv``, not inside gymnasium)."""

    def __init__(self, cfg: dict) -> None:
        self._env = SpacesEnv('dict')

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed = seed

    def reset(self):
        return self._env.reset(seed=self._seed)[0]

    def step(self, action) -> BaseEnvTimestep:
        obs, reward, _, truncated, _ = self._env.step(action)
        return BaseEnvTimestep(obs, reward, truncated, {'TimeLimit.truncated': truncated} |
                               ({'eval_episode_return': -1.0} if truncated else {}))

    def close(self) -> None:
        pass

    observation_space = property(lambda self: self._env.observation_space)
    action_space = property(lambda self: self._env.action_space)
    reward_space = property(lambda self: gym.spaces.Box(-1, 0, (1,)))


def test_wrappers_from_the_config_in_order_and_their_errors():
    env = GymnasiumEnv(dict(env_id='SpacesTest-v0', env_kwargs=dict(obs='box2d'),
                            wrappers=['FlattenObservation', dict(type='gymnasium.wrappers.TimeLimit',
                                                                 max_episode_steps=3)]))
    assert env.observation_space.shape == (25,)  # flattened by the wrapper: nothing left to adapt
    env.seed(0)
    env.reset()
    assert [env.step(np.zeros(1)).done for _ in range(3)] == [False, False, True]  # the inner 12-step limit cut to 3
    with pytest.raises(ConfigError, match=r"cannot import wrapper 'NoSuchWrapper'.*give an import path.*ClipAction"):
        GymnasiumEnv(dict(env_id='Pendulum-v1', wrappers=['NoSuchWrapper']))
    with pytest.raises(ConfigError, match=r"TimeLimit\(\) failed .*max_episode_steps"):
        GymnasiumEnv(dict(env_id='Pendulum-v1', wrappers=['TimeLimit']))


def test_a_buffer_too_large_for_memory_is_refused_before_allocating(monkeypatch):
    import ding_lite.data.buffer as buffer_module
    monkeypatch.setattr(buffer_module, 'available_memory', lambda device: 2 ** 30)  # 1 GiB free
    example = {'obs': np.zeros((3, 96, 96), np.uint8), 'action': np.zeros(3, np.float32)}  # 27,660 bytes
    buffer = ReplayBuffer(dict(replay_buffer_size=100_000))
    with pytest.raises(ConfigError, match=r"needs 2.6 GiB for replay_buffer_size=100000 .* 1.0 GiB of memory is "
                                          r"available .* at most 38819 \(half the memory: 19409\)"):
        buffer.check_memory(example)
    with pytest.raises(ConfigError, match='replay_buffer_size'):  # the allocation at the first push checks too
        buffer.push([example])
    with pytest.warns(UserWarning, match='more than half of it'):
        ReplayBuffer(dict(replay_buffer_size=30_000)).check_memory(example)
