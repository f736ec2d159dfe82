"""Envs written the DI-engine way (shape-(1,) reward and return) and the gymnasium way (scalars) both train."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.data import ReplayBuffer
from ding_lite.registry import ENV_REGISTRY, POLICY_REGISTRY
from entry import serial_pipeline
from envs import BaseEnv, BaseEnvTimestep
from policy_zoo import SACPolicy


class _Pendulum(BaseEnv):
    """A 20-step Pendulum; subclasses choose how reward, done and the episode return are reported."""

    config = dict(collector_env_num=2, evaluator_env_num=2)

    def __init__(self, cfg: dict) -> None:
        self._env = gym.make('Pendulum-v1', max_episode_steps=20)
        self._seed, self._return = 0, 0.0

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed = seed

    def reset(self) -> np.ndarray:
        self._return = 0.0
        return self._env.reset(seed=self._seed)[0].astype(np.float32)

    def step(self, action: np.ndarray) -> BaseEnvTimestep:
        obs, reward, terminated, truncated, _ = self._env.step(2.0 * np.asarray(action, np.float32).reshape(1))
        self._return += reward
        done = terminated or truncated
        info = {'TimeLimit.truncated': truncated and not terminated}
        if done:
            info['eval_episode_return'] = self._report(self._return)
        return BaseEnvTimestep(obs.astype(np.float32), self._report(reward), self._done(done), info)

    def close(self) -> None:
        self._env.close()

    observation_space = property(lambda self: self._env.observation_space)
    action_space = property(lambda self: gym.spaces.Box(-1.0, 1.0, (1,), np.float32))
    reward_space = property(lambda self: gym.spaces.Box(-np.inf, np.inf, (1,), np.float32))


class DIEngineStyleEnv(_Pendulum):
    """As every DI-engine env: ``np.array([r])`` rewards and returns, a numpy bool done, and numpy actions assumed
    (DI-engine's MuJoCo env calls ``action.astype('float32')``)."""

    def step(self, action: np.ndarray) -> BaseEnvTimestep:
        return super().step(action.astype('float32'))

    def _report(self, value: float) -> np.ndarray:
        return np.array([value], dtype=np.float32)

    def _done(self, done: bool) -> np.bool_:
        return np.bool_(done)


class GymnasiumStyleEnv(_Pendulum):
    """Python floats and 0-d tensors."""

    def _report(self, value: float) -> float:
        return float(value)

    def _done(self, done: bool) -> torch.Tensor:
        return torch.tensor(done)


class ShapeRecordingSAC(SACPolicy):
    reward_shapes: set = set()

    def _forward_learn(self, data):
        ShapeRecordingSAC.reward_shapes.add((tuple(data.reward.shape), tuple(data.done.shape)))
        return super()._forward_learn(data)


@pytest.fixture
def registered():
    ENV_REGISTRY.register('test_di_engine_style', DIEngineStyleEnv, force_overwrite=True)
    ENV_REGISTRY.register('test_gymnasium_style', GymnasiumStyleEnv, force_overwrite=True)
    POLICY_REGISTRY.register('test_shape_recording_sac', ShapeRecordingSAC, force_overwrite=True)
    yield
    for registry, name in ((ENV_REGISTRY, 'test_di_engine_style'), (ENV_REGISTRY, 'test_gymnasium_style'),
                           (POLICY_REGISTRY, 'test_shape_recording_sac')):
        registry._table.pop(name)


@pytest.mark.parametrize('twin_critic', [True, False])
def test_both_conventions_train_with_twin_and_single_critics(registered, tiny_pendulum, twin_critic):
    main, create = tiny_pendulum
    main.env.pop('env_kwargs')
    main.policy.model.twin_critic = twin_critic
    returns = {}
    for env_type in ('test_di_engine_style', 'test_gymnasium_style'):
        main.exp_name = f'{tiny_pendulum[0].exp_name}_{env_type}'
        create.env.type, create.policy.type = env_type, 'test_shape_recording_sac'
        ShapeRecordingSAC.reward_shapes = set()
        policy = serial_pipeline((main, create), seed=0, max_env_step=200)
        assert ShapeRecordingSAC.reward_shapes == {((16,), (16,))}       # the learn step sees [B]
        rows = open(f'{main.exp_name}/log/evaluator.csv').read().splitlines()[1:]
        returns[env_type] = [row.split(',')[3:] for row in rows]  # return mean, std, min, max
    # the same episodes, reported as shape-(1,) arrays or as scalars, are the same run
    assert len(returns['test_gymnasium_style']) >= 2
    assert returns['test_di_engine_style'] == returns['test_gymnasium_style']
    assert policy._model.twin_critic is twin_critic


def test_collector_normalises_at_the_boundary(registered, tiny_pendulum):
    from functools import partial
    from ding_lite.config import compile_config
    from ding_lite.worker import SampleSerialCollector
    from envs import BaseEnvManager
    cfg = compile_config(*tiny_pendulum, save_cfg=False)
    manager = BaseEnvManager([partial(DIEngineStyleEnv, {})] * 2)
    collector = SampleSerialCollector(cfg.policy.collect.collector, manager, SACPolicy(cfg.policy).collect_mode,
                                      exp_name=cfg.exp_name)
    data = collector.collect(n_sample=40)
    assert all(isinstance(t['reward'], float) and isinstance(t['done'], bool) for t in data)
    assert len(collector.finished_episodes) == 2 and isinstance(collector.finished_episodes[0]['return'], float)
    buffer = ReplayBuffer({'replay_buffer_size': 100})
    buffer.push(data)
    assert buffer.sample(8).reward.shape == (8,) and buffer.sample(8).done.shape == (8,)


def test_a_reward_that_is_not_one_value_is_a_clear_error(registered, tiny_pendulum, monkeypatch):
    main, create = tiny_pendulum
    create.env.type = 'test_di_engine_style'
    del main.env['env_kwargs']  # the pendulum type's key: this env declares its own (strictly checked)
    monkeypatch.setattr(DIEngineStyleEnv, '_report', lambda self, value: np.array([value, value], dtype=np.float32))
    with pytest.raises(ValueError, match=r"env 0's reward must be a number or a one-element array, got \(2,\)"):
        serial_pipeline((main, create), seed=0, max_env_step=100)
