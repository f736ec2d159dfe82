"""Tasks with a multi-dimensional reward (``policy.reward_weights``): Pendulum's cost split into its three terms."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.registry import ENV_REGISTRY
from .di_engine_envs import DIEngineEnv

PENDULUM_TERMS = ('angle', 'speed', 'torque')  # -theta^2, -0.1 theta'^2, -0.001 u^2: their sum is Pendulum's reward


class PendulumTerms(gym.Wrapper):
    """Pendulum-v1 whose reward is the vector of its cost's terms (of the state before the step, as its own)."""

    def step(self, action: Any) -> tuple[Any, np.ndarray, bool, bool, dict]:
        theta, speed = self.env.unwrapped.state
        torque = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -2.0, 2.0))
        angle = (theta + np.pi) % (2 * np.pi) - np.pi
        obs, _, terminated, truncated, info = self.env.step(action)
        reward = -np.array([angle ** 2, 0.1 * speed ** 2, 0.001 * torque ** 2], dtype=np.float32)
        return obs, reward, terminated, truncated, info


def pendulum_split(**kwargs: Any) -> gym.Env:
    return PendulumTerms(gym.make('Pendulum-v1', **kwargs).unwrapped)


if 'PendulumSplit-v1' not in gym.registry:
    gym.register('PendulumSplit-v1', entry_point='envs.multi_reward:pendulum_split', max_episode_steps=200,
                 disable_env_checker=True)  # its checker wants a number for a reward


@ENV_REGISTRY.register('pendulum_split')
class PendulumSplitEnv(DIEngineEnv):
    """Pendulum-v1 with a reward of 3 dimensions (``PendulumSplit-v1``): angle, speed and torque costs, each
    negative; weights [1, 1, 1] make Pendulum's own reward."""

    config = dict(env_id='PendulumSplit-v1')
