"""Pixel observations: conv encoders in the QAC models (DI-engine's encoder_hidden_size_list, share_encoder), uint8
frames kept as uint8 in the buffer, frame stacking, and SAC / discrete SAC training on a small pixel env."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_lite.model import ContinuousQAC, DiscreteQAC
from ding_lite.model.heads import ConvEncoder, FCEncoder
from ding_lite.registry import ENV_REGISTRY
from ding_lite.utils import load_file
from entry import eval as evaluate
from entry import serial_pipeline
from envs import BaseEnv, BaseEnvTimestep, GymnasiumEnv

SHAPE = [3, 36, 36]
SIZES = [8, 16, 16, 32]  # three conv layers (kernels 8, 4, 3), then 32 features


@ENV_REGISTRY.register('dot_pixels', force_overwrite=True)
class DotPixelsEnv(BaseEnv):
    """A dot on a track drawn into a ``[3, 36, 36]`` uint8 image; actions push it; the reward is -|position|."""

    config = dict(discrete=False, episode_length=20)

    def __init__(self, cfg: dict) -> None:
        self._cfg = EasyDict(self.default_config(), **cfg)
        self._rng = np.random.default_rng(0)
        self._discrete = self._cfg.discrete

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._rng = np.random.default_rng(seed)

    def reset(self) -> np.ndarray:
        self._x, self._t, self._return = self._rng.uniform(-1, 1), 0, 0.0
        return self._image()

    def _image(self) -> np.ndarray:
        image = np.zeros(SHAPE, np.uint8)
        column = int(round((self._x + 1) / 2 * (SHAPE[2] - 1)))
        image[:, 14:22, max(0, column - 2):column + 3] = 255
        return image

    def step(self, action) -> BaseEnvTimestep:
        push = (int(action) - 1) if self._discrete else float(np.clip(np.asarray(action).reshape(-1)[0], -1, 1))
        self._x, self._t = float(np.clip(self._x + 0.2 * push, -1, 1)), self._t + 1
        reward = -abs(self._x)
        self._return += reward
        done = self._t >= self._cfg.episode_length
        info = {'TimeLimit.truncated': done}
        if done:
            info['eval_episode_return'] = self._return
        return BaseEnvTimestep(self._image(), reward, done, info)

    def close(self) -> None:
        pass

    @property
    def observation_space(self) -> gym.Space:
        return gym.spaces.Box(0, 255, SHAPE, np.uint8)

    @property
    def action_space(self) -> gym.Space:
        return gym.spaces.Discrete(3) if self._discrete else gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    @property
    def reward_space(self) -> gym.Space:
        return gym.spaces.Box(-1.0, 0.0, (1,), np.float32)


def test_conv_encoders_scale_uint8_and_share_or_not():
    torch.manual_seed(0)
    frames = torch.randint(0, 256, (4, *SHAPE), dtype=torch.uint8)
    model = ContinuousQAC(SHAPE, 2, twin_critic=True, encoder_hidden_size_list=SIZES)
    assert isinstance(model.actor[0], ConvEncoder) and isinstance(model.critic.encoder, ConvEncoder)
    mu, _ = model.compute_actor(frames)['logit']
    torch.testing.assert_close(mu, model.compute_actor(frames.float() / 255)['logit'][0])  # scaled in the encoder
    q = model.compute_critic({'obs': frames, 'action': torch.zeros(4, 2)})['q_value']
    assert mu.shape == (4, 2) and q.shape == (2, 4)

    shared = ContinuousQAC(SHAPE, 2, twin_critic=True, encoder_hidden_size_list=SIZES, share_encoder=True)
    encoder = set(map(id, shared.critic.encoder.parameters()))
    assert not encoder & set(map(id, shared.actor.parameters()))  # the actor's optimizer leaves the encoder alone
    shared.compute_actor(frames)['logit'][0].sum().backward()  # and the actor's loss does not reach it
    assert all(p.grad is None for p in shared.critic.encoder.parameters())
    assert sum(p.numel() for p in shared.parameters()) < sum(p.numel() for p in model.parameters())

    discrete = DiscreteQAC(SHAPE, 3, twin_critic=True, encoder_hidden_size_list=SIZES, share_encoder=True)
    assert discrete.compute_actor(frames)['logit'].shape == (4, 3)
    assert discrete.compute_critic(frames)['q_value'].shape == (2, 4, 3)


def test_encoder_hidden_size_list_builds_an_fc_encoder_for_vectors():
    model = ContinuousQAC(5, 1, twin_critic=True, encoder_hidden_size_list=[32, 16])
    assert isinstance(model.actor[0], FCEncoder) and model.actor[1][0].in_features == 16
    assert model.compute_critic({'obs': torch.randn(3, 5), 'action': torch.zeros(3)})['q_value'].shape == (2, 3)
    assert list(ContinuousQAC(5, 1).state_dict())[0] == 'actor.0.0.weight'  # no encoder: the keys of before
    with pytest.raises(ValueError, match='too small for 3 conv layers'):  # kernels set: as they are
        ContinuousQAC([3, 20, 20], 1, encoder_hidden_size_list=SIZES, encoder_kernel_size=[8, 4, 3])
    small = ContinuousQAC([3, 5, 5], 1, encoder_hidden_size_list=SIZES)  # left out: fitted to the image
    kernels = [conv.kernel_size for conv in small.actor[0].conv if isinstance(conv, torch.nn.Conv2d)]
    assert kernels == [(3, 3), (3, 3), (1, 1)]


def _pixel_cfg(tmp_path, policy: str, discrete: bool):
    main = dict(
        exp_name=str(tmp_path / policy), env=dict(discrete=discrete, collector_env_num=2, evaluator_env_num=1,
                                                  n_evaluator_episode=1, stop_value=0),
        policy=dict(random_collect_size=40 if not discrete else 0,
                    model=dict(obs_shape=SHAPE, action_shape=3 if discrete else 1, twin_critic=True,
                               encoder_hidden_size_list=SIZES, share_encoder=not discrete,
                               actor_head_hidden_size=32, critic_head_hidden_size=32),
                    learn=dict(batch_size=16, learner=dict(hook=dict(save_ckpt_after_iter=10 ** 6))),
                    collect=dict(n_sample=8), eval=dict(evaluator=dict(eval_freq=20)),
                    other=dict(replay_buffer=dict(replay_buffer_size=500))))
    return EasyDict(main), EasyDict(env=dict(type='dot_pixels'), env_manager=dict(type='base'),
                                    policy=dict(type=policy))


@pytest.mark.parametrize('policy, discrete', [('sac', False), ('discrete_sac', True)])
def test_training_on_pixels_keeps_frames_as_uint8(tmp_path, policy, discrete):
    main, create = _pixel_cfg(tmp_path, policy, discrete)
    trained = serial_pipeline((main, create), seed=0, max_env_step=160)
    state = load_file(str(tmp_path / policy / 'ckpt' / 'ckpt_last.pth.tar'))
    buffer = load_file(str(tmp_path / policy / 'ckpt' / state['buffer_file']))['replay_buffer']['data']
    assert buffer[('obs',)].dtype == buffer[('next_obs',)].dtype == torch.uint8
    assert buffer[('obs',)].shape[1:] == tuple(SHAPE) and buffer[('obs',)].shape[0] >= 160
    assert state['last_iter'] > 0 and torch.isfinite(next(trained.model.parameters())).all()
    target = {k: v for k, v in state['target_model'].items() if 'encoder' in k}
    assert target and any(not torch.equal(v, state['model'][k]) for k, v in target.items())  # Polyak-followed
    assert np.isfinite(evaluate((main, create), seed=0, state_dict=state))


def test_frame_stack_stacks_observations_then_adapts_them():
    env = GymnasiumEnv(dict(env_id='CartPole-v1', frame_stack=3))
    env.seed(0)
    first = env.reset()
    assert first.shape == (12,) and env.observation_space.shape == (12,)  # a (3, 4) Box: flattened, frame by frame
    nxt = env.step(0).obs
    np.testing.assert_array_equal(nxt[4:8], first[8:12])  # the window moved by one step
    env.close()
    pixels = GymnasiumEnv(dict(env_id='CarRacing-v3', frame_stack=2))  # RGB frames: their channels stacked, CHW
    pixels.seed(0)
    frames = pixels.reset()
    assert frames.shape == pixels.observation_space.shape == (6, 96, 96) and frames.dtype == np.uint8
    np.testing.assert_array_equal(pixels.step(np.zeros(3)).obs[:3], frames[3:])
    pixels.close()
