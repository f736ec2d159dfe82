"""A hybrid-action env whose Discrete part has 3 choices (hybrid SAC's routes are tested on it): a point on a line
moved by a push in [-1, 1] at one of three speeds; reward minus its distance to 0; 10 steps."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class ThreeModes(gym.Env):
    SPEED = (0.0, 0.1, 0.3)

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.action_space = gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (1,), np.float32)))

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.position = float(self.np_random.uniform(-1.0, 1.0))
        return np.array([self.position], np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        mode, push = int(action[0]), float(np.clip(np.asarray(action[1]).reshape(-1)[0], -1.0, 1.0))
        self.position = float(np.clip(self.position + self.SPEED[mode] * push, -2.0, 2.0))
        return np.array([self.position], np.float32), -abs(self.position), False, False, {}


if 'ThreeModes-v0' not in gym.registry:
    gym.register('ThreeModes-v0', entry_point='tests.envs.three_modes:ThreeModes', max_episode_steps=10)
