"""Any gymnasium env from the config: observation spaces adapted, shapes read from the env, unusable spaces and bad
env keys refused before any env step is collected, wrappers from the config, the buffer's memory checked."""
from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_lite.config import ConfigError
from ding_lite.data import ReplayBuffer
from ding_lite.registry import ENV_REGISTRY
from ding_lite.utils import load_file
from entry import eval as evaluate
from entry import serial_pipeline
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


@pytest.mark.parametrize('manager', ['base', 'subprocess'])
@pytest.mark.parametrize('obs, action, stored', [
    ('dict', 'box', (4,)),            # Dict(Box(1), Discrete(3)) flattened: 1 + one-hot 3
    ('box2d', 'box', (25,)),          # a (5, 5) Box flattened
    ('hwc', 'box', (3,) + IMAGE),     # HWC uint8 transposed to CHW
    ('chw', 'box', (3,) + IMAGE),     # CHW as it is
    ('discrete', 'box', (5,)),        # Discrete(5) one-hot
    ('box', 'asym', (1,)),            # actions scaled into [2, 5]
])
def test_spaces_are_adapted_and_shapes_read_from_the_env(tmp_path, manager, obs, action, stored):
    main, create = _cfg(tmp_path, obs, action, manager)
    SpacesEnv.ACTIONS.clear()
    serial_pipeline((main, create), seed=0, max_env_step=160)
    saved = open(os.path.join(main.exp_name, 'total_config.py')).read()
    obs_shape = list(stored) if len(stored) == 3 else stored[0]
    assert f"'obs_shape': {obs_shape!r}" in saved and "'action_shape': 1," in saved  # read from the env, recorded
    state = load_file(os.path.join(main.exp_name, 'ckpt', 'ckpt_last.pth.tar'))
    data = load_file(os.path.join(main.exp_name, 'ckpt', state['buffer_file']))['replay_buffer']['data']
    assert data[('obs',)].shape[1:] == stored and data[('next_obs',)].shape[1:] == stored
    assert data[('obs',)].dtype == (torch.uint8 if len(stored) == 3 else torch.float32)
    assert state['last_iter'] > 0 and np.isfinite(evaluate((main, create), seed=0, state_dict=state))
    if manager == 'base':  # the env, in this process, saw only actions inside its own bounds
        actions = np.array(SpacesEnv.ACTIONS)
        low, high = (2.0, 5.0) if action == 'asym' else (-1.0, 1.0)
        assert len(actions) >= 160 and actions.min() >= low and actions.max() <= high
        if action == 'asym':
            assert actions.max() - actions.min() > 1.5  # spread over the range, not clipped to one end


@pytest.mark.parametrize('action, model, message', [
    ('multidiscrete', {}, r"policy 'sac' needs continuous \(Box\) actions, but env 'SpacesTest-v0' has "
                          r"MultiDiscrete.*a 1-D Box \('sac'\) or a Discrete space \('discrete_sac'\)"),
    ('box', dict(obs_shape=[36, 36, 3]), r"policy.model.obs_shape=\[36, 36, 3\] does not match env 'SpacesTest-v0', "
                                         r"whose observations are \[3, 36, 36\]"),
    ('box', dict(action_shape=2), r"policy.model.action_shape=2 does not match env 'SpacesTest-v0', whose action "
                                  r"size is 1"),
])
def test_unusable_spaces_and_wrong_shapes_fail_before_any_env_step(tmp_path, action, model, message):
    main, create = _cfg(tmp_path, 'hwc', action, **model)
    SpacesEnv.STEPS[0] = 0
    with pytest.raises(ConfigError, match=message):
        serial_pipeline((main, create), seed=0, max_env_step=96)
    assert SpacesEnv.STEPS[0] == 0 and not os.path.exists(main.exp_name)  # nothing stepped, nothing left behind


@pytest.mark.parametrize('obs, message', [
    ('text', r"env 'SpacesTest-v0': the env's observation space is a Text: text, which would be trained on as "
             r"character codes; map it to a Box"),
    ('graph', r"the env's observation space is a Graph: a graph of varying size, which needs a graph network"),
    ('mission', r"observation\['mission'\] is a Text: text, .*; drop it with a wrapper in env.wrappers: "
                r"dict\(type='FilterObservation', filter_keys=\['image', 'pos'\]\), or for MiniGrid "
                r"'minigrid.wrappers.ImgObsWrapper'"),
])
def test_text_and_graph_observations_are_refused_by_name(tmp_path, obs, message):
    main, create = _cfg(tmp_path, obs)
    SpacesEnv.STEPS[0] = 0
    with pytest.raises(ConfigError, match=message):
        serial_pipeline((main, create), seed=0, max_env_step=96)
    assert SpacesEnv.STEPS[0] == 0 and not os.path.exists(main.exp_name)


def test_the_advised_wrapper_trains_a_small_image_beside_a_vector(tmp_path):
    """A Dict of a 16x16 image (too small for DI-engine's kernels: fitted) and a vector, its text key dropped as the
    refusal advises."""
    main, create = _cfg(tmp_path, 'mission')
    main.env.wrappers = [dict(type='FilterObservation', filter_keys=['image', 'pos'])]
    main.policy.model.encoder_hidden_size_list = [8, 8, 8, 16]
    serial_pipeline((main, create), seed=0, max_env_step=96)
    saved = open(os.path.join(main.exp_name, 'total_config.py')).read()
    assert "'obs_shape': {'image': [3, 16, 16], 'pos': 1}" in saved


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


def test_a_users_base_env_with_a_dict_observation_is_flattened_too(tmp_path):
    main, create = _cfg(tmp_path, 'dict')
    main.env = EasyDict(collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1)
    create.env.type = 'dict_obs_test'
    policy = serial_pipeline((main, create), seed=0, max_env_step=64)
    assert policy._cfg.model.obs_shape == 4


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


def test_env_key_typos_are_one_error_line_at_the_command_line(tmp_path):
    config = tmp_path / 'bad_env_config.py'
    config.write_text(
        "main_config = dict(exp_name='bad_seed0', env=dict(env_id='Pendulum-v1', colector_env_num=2),\n"
        "                   policy=dict(model=dict(), learn=dict(batch_size=16)))\n"
        "create_config = dict(env=dict(type='gymnasium'), policy=dict(type='sac'))\n")
    result = subprocess.run([sys.executable, '-m', 'entry.cli', '-m', 'serial', '-c', str(config)], cwd=tmp_path,
                            capture_output=True, text=True, env={**os.environ, 'PYTHONPATH': ROOT}, timeout=120)
    assert result.returncode != 0 and not (tmp_path / 'bad_seed0').exists()
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("ding_lite: error: ConfigError: unknown config key 'env.colector_env_num'; did you mean "
                           "'env.collector_env_num'? (envs each collector steps) declared here: act_scale, ")
    assert 'norm_obs, norm_reward, reward_clip, stop_value, wrappers' in line and 'Traceback' not in result.stderr


def test_norm_obs_on_images_is_refused_before_any_env_step(tmp_path):
    main, create = _cfg(tmp_path, 'hwc')
    main.env.norm_obs = dict(use_norm=True)
    SpacesEnv.STEPS[0] = 0
    with pytest.raises(ConfigError, match=r"env.norm_obs.use_norm=True normalises vector observations, but the "
                                          r"model's obs_shape is \[3, 36, 36\]"):
        serial_pipeline((main, create), seed=0, max_env_step=96)
    assert SpacesEnv.STEPS[0] == 0 and not os.path.exists(main.exp_name)
