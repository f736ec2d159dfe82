from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.registry import ENV_REGISTRY
from envs import BaseEnvTimestep, CartPoleEnv, GymnasiumEnv, PendulumEnv

def test_registered_names_and_default_ids():
    assert ENV_REGISTRY.get('gymnasium') is GymnasiumEnv
    assert ENV_REGISTRY.get('pendulum')().env_id == 'Pendulum-v1'
    assert ENV_REGISTRY.get('cartpole')().env_id == 'CartPole-v1'

def test_action_scaling_into_bounds():
    env = PendulumEnv()
    env.seed(0)
    env.reset()
    assert env.action_space.low.tolist() == [-1.0] and env.action_space.high.tolist() == [1.0]
    for action, torque in ((-1.0, -2.0), (0.0, 0.0), (0.5, 1.0), (1.0, 2.0), (3.0, 2.0)):
        env.step(np.array([action], dtype=np.float32))
        assert env._env.unwrapped.last_u == pytest.approx(torque)
    unscaled = PendulumEnv({'act_scale': False})
    unscaled.reset()
    unscaled.step(np.array([1.5]))
    assert unscaled._env.unwrapped.last_u == pytest.approx(1.5)
    assert unscaled.action_space.high.tolist() == [2.0]

def test_time_limit_end_is_done_and_truncated_with_return():
    env = PendulumEnv({'env_kwargs': {'max_episode_steps': 5}})
    env.seed(1)
    obs = env.reset()
    assert obs.dtype == np.float32 and obs.shape == (3,)
    rewards = []
    for step in range(5):
        timestep = env.step(np.zeros(1, dtype=np.float32))
        assert isinstance(timestep, BaseEnvTimestep) and timestep.obs.dtype == np.float32
        rewards.append(float(timestep.reward))
        assert timestep.done == (step == 4)
    assert timestep.info['TimeLimit.truncated'] is True
    assert timestep.info['eval_episode_return'] == pytest.approx(sum(rewards), rel=1e-5)

def test_termination_is_not_truncation():
    env = CartPoleEnv()
    env.seed(0)
    env.reset()
    timestep = None
    for _ in range(500):
        timestep = env.step(0)  # always push left: the pole falls long before the time limit
        if timestep.done:
            break
    assert timestep.done and timestep.info['TimeLimit.truncated'] is False
    assert 'eval_episode_return' in timestep.info

def test_seeding_reproducible_and_dynamic():
    a, b = PendulumEnv(), PendulumEnv()
    a.seed(7), b.seed(7)
    first = [a.reset() for _ in range(3)]
    np.testing.assert_array_equal(np.stack(first), np.stack([b.reset() for _ in range(3)]))
    assert not np.allclose(first[0], first[1])                  # dynamic: each episode a new start
    fixed = PendulumEnv()
    fixed.seed(7, dynamic_seed=False)
    np.testing.assert_array_equal(fixed.reset(), fixed.reset())  # eval convention: same start every time

def test_bad_env_id():
    with pytest.raises(ValueError, match="needs env.env_id"):
        GymnasiumEnv({})
    with pytest.raises(ValueError, match="cannot make gymnasium env 'NoSuchEnv-v0'"):
        GymnasiumEnv({'env_id': 'NoSuchEnv-v0'})

@pytest.mark.parametrize('env_type, gym_era, installed', [
    ('lunarlander', 'LunarLanderContinuous-v2', 'LunarLanderContinuous-v3'),
    ('lunarlander', 'LunarLander-v2', 'LunarLander-v3'),
    ('bipedalwalker', 'BipedalWalker-v3', 'BipedalWalker-v3'),
    ('mujoco', 'Hopper-v3', 'Hopper-v5'),
    ('mujoco', 'Ant-v3', 'Ant-v4'),
])
def test_di_engine_env_types_map_gym_era_ids(env_type, gym_era, installed, caplog):
    import envs.gymnasium_env as module
    module._logged_ids.discard(gym_era)
    with caplog.at_level('WARNING', logger='envs.gymnasium_env'):
        env = ENV_REGISTRY.get(env_type)({'env_id': gym_era})
        ENV_REGISTRY.get(env_type)({'env_id': gym_era}).close()
    assert env.env_id == installed
    lines = [r.message for r in caplog.records if gym_era in r.message]
    assert len(lines) == (0 if gym_era == installed else 1)           # one log line, however many envs
    if gym_era == 'Ant-v3':
        assert env.observation_space.shape == (111,)                  # DI-engine's Ant config: obs_shape 111
    env.close()

def test_the_plain_gymnasium_type_maps_nothing():
    with pytest.raises(ValueError, match="cannot make gymnasium env 'Hopper-v3'"):
        GymnasiumEnv({'env_id': 'Hopper-v3'})

def test_bipedalwalker_reward_clip_and_mujoco_norm_keys():
    from envs import BipedalWalkerEnv, MujocoEnv
    env = BipedalWalkerEnv({'rew_clip': True})
    assert env._train_reward(-100.0) == -10.0 and env._train_reward(3.0) == 3.0
    assert BipedalWalkerEnv({})._train_reward(-100.0) == -100.0
    assert MujocoEnv({'env_id': 'Hopper-v5', 'norm_reward': {'use_norm': True}})._cfg.norm_reward.use_norm  # learned


PACKAGE = '''
import gymnasium as gym
import numpy as np


class ToyEnv(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, fail=False):
        assert not fail

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), -float(np.abs(action).sum()), False, False, {}


gym.register('ToyPackaged-v0', entry_point=ToyEnv, max_episode_steps=10)
'''


def test_minigrid_by_package_id_names_its_mission_key_and_the_wrapper_that_drops_it():
    pytest.importorskip('minigrid', reason="the minigrid extra: pip install 'ding-lite[minigrid]'")
    from ding_lite.config import ConfigError
    with pytest.raises(ConfigError, match=r"env 'minigrid:MiniGrid-Empty-5x5-v0': observation\['mission'\] is a "
                                          r"MissionSpace: text \(MiniGrid's mission\).*"
                                          r"'minigrid.wrappers.ImgObsWrapper'"):
        GymnasiumEnv(dict(env_id='minigrid:MiniGrid-Empty-5x5-v0'))
    env = GymnasiumEnv(dict(env_id='minigrid:MiniGrid-Empty-5x5-v0', wrappers=['minigrid.wrappers.ImgObsWrapper']))
    env.seed(0)
    assert env.reset().shape == (3, 7, 7)
    env.close()


def test_a_users_env_failing_an_assertion_in_its_constructor_says_where(tmp_path):
    from envs.from_gym import adapted_env

    class Strict:  # a user's env class
        def __init__(self, cfg):
            assert cfg.get('size', 0) > 0

    with pytest.raises(ValueError, match=r"(?s)env .*Strict failed to build: AssertionError.* at .*test_gymnasium_env.py:\d+ "
                                         r"\(assert cfg.get\('size', 0\) > 0\)"):
        adapted_env(Strict, cfg={})


class _Dot(gym.Env):
    """A 16x16 picture of a dot that moves with the action: renders to frames, and nothing else."""

    metadata = {'render_modes': ['rgb_array'], 'render_fps': 30}
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode=None):
        self.render_mode, self.x = render_mode, 0.0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x = 0.0
        return np.array([self.x], np.float32), {}

    def step(self, action):
        self.x = float(np.clip(self.x + 0.1 * float(action[0]), -1, 1))
        return np.array([self.x], np.float32), -abs(self.x), False, False, {}

    def render(self):
        frame = np.zeros((16, 16, 3), np.uint8)
        frame[8, int((self.x + 1) * 7.5)] = 255
        return frame


def test_videos_of_an_env_rendering_to_frames_for_its_observations(tmp_path):
    """A pixel env (``AddRenderObservation``, which needs ``render_mode='rgb_array'`` in ``env_kwargs``) records its
    episodes as they are: the env is not made twice with two render modes."""
    pytest.importorskip('moviepy', reason="recording videos needs moviepy: pip install 'ding-lite[video]'")
    gym.register('DotPixels-v0', entry_point=_Dot, max_episode_steps=6)
    env = GymnasiumEnv(dict(env_id='DotPixels-v0', env_kwargs=dict(render_mode='rgb_array'),
                            wrappers=['AddRenderObservation']))
    inner = env._env
    env.enable_save_replay(str(tmp_path / 'v'))
    assert env._env.env is inner  # recorded as it is
    env.seed(0)
    assert env.reset().shape == (3, 16, 16)  # frames as CHW images
    done = False
    while not done:
        done = env.step(np.array([0.5], np.float32)).done
    env.close()
    videos = list((tmp_path / 'v').glob('*.mp4'))
    assert len(videos) == 1 and videos[0].stat().st_size > 0
