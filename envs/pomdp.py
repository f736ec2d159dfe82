"""Partially observed tasks: the velocity masked, so that acting well needs memory (model.rnn) or stacked frames."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.registry import ENV_REGISTRY
from .di_engine_envs import DIEngineEnv

POSITION_ONLY_IDS = {'PendulumPosition-v1': 'Pendulum-v1'}


class KeepFirst(gym.ObservationWrapper):
    """The first ``size`` entries of a Box observation (Pendulum's cos θ, sin θ without θ')."""

    def __init__(self, env: gym.Env, size: int) -> None:
        super().__init__(env)
        space = env.observation_space
        self.size = size
        self.observation_space = gym.spaces.Box(space.low[:size], space.high[:size], dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[:self.size]


def pendulum_position(**kwargs: Any) -> gym.Env:
    """Pendulum-v1 observing (cos θ, sin θ) only: the angular velocity must be inferred from the history."""
    return KeepFirst(gym.make('Pendulum-v1', **kwargs).unwrapped, 2)


if 'PendulumPosition-v1' not in gym.registry:
    gym.register('PendulumPosition-v1', entry_point='envs.pomdp:pendulum_position', max_episode_steps=200)


@ENV_REGISTRY.register('pendulum_position')
class PendulumPositionEnv(DIEngineEnv):
    """Position-only Pendulum (``PendulumPosition-v1``: cos θ, sin θ; 200-step episodes, truncated only)."""

    config = dict(env_id='PendulumPosition-v1')
