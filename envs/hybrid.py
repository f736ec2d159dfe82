"""Hybrid actions: an env whose action space is a ``Tuple`` or ``Dict`` of one ``Discrete`` and one 1-D ``Box`` (a
move with a direction, a tool with a strength), as the policy sees it: one flat float vector ``[choice, box...]``,
the box in [-1, 1]."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class HybridSpace(gym.Space):
    """The policy's view of a hybrid action space: ``[choice, box_1 .. box_D]`` (float32), ``choice`` an integer in
    ``[0, n)``, the box in [-1, 1]."""

    def __init__(self, n: int, box_size: int, seed: int | None = None) -> None:
        self.n, self.box_size = int(n), int(box_size)
        super().__init__((1 + self.box_size,), np.float32, seed)

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        choice = self.np_random.integers(self.n)
        box = self.np_random.uniform(-1.0, 1.0, self.box_size)
        return np.concatenate([[choice], box]).astype(np.float32)

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        return x.shape == self.shape and float(x[0]).is_integer() and 0 <= x[0] < self.n and \
            bool(np.all(np.abs(x[1:]) <= 1.0))

    def __repr__(self) -> str:
        return f"HybridSpace(choices={self.n}, box={self.box_size})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, HybridSpace) and (other.n, other.box_size) == (self.n, self.box_size)


class HybridActions:
    """Maps the policy's ``[choice, box...]`` to the env's own ``Tuple``/``Dict`` action (the box scaled from
    [-1, 1] into its bounds)."""

    def __init__(self, space: gym.spaces.Tuple | gym.spaces.Dict, discrete: Any, box: Any) -> None:
        self.env_space, self._discrete, self._box = space, discrete, box   # the Discrete's and the Box's keys
        subspaces = space.spaces
        self.choices, self.box_space = subspaces[discrete], subspaces[box]
        self.space = HybridSpace(self.choices.n, self.box_space.shape[0])
        self._low = self.box_space.low.astype(np.float64)
        self._half = 0.5 * (self.box_space.high.astype(np.float64) - self._low)

    @classmethod
    def of(cls, space: gym.Space) -> HybridActions | None:
        """The adapter of ``space`` where it is hybrid (one Discrete and one finite 1-D Box), else None."""
        if not isinstance(space, (gym.spaces.Tuple, gym.spaces.Dict)):
            return None
        items = list(space.spaces.items()) if isinstance(space, gym.spaces.Dict) else list(enumerate(space.spaces))
        if len(items) != 2:
            return None
        discrete = [key for key, sub in items if isinstance(sub, gym.spaces.Discrete)]
        box = [key for key, sub in items if isinstance(sub, gym.spaces.Box) and len(sub.shape) == 1 and
               np.all(np.isfinite(sub.low)) and np.all(np.isfinite(sub.high))]
        return cls(space, discrete[0], box[0]) if len(discrete) == 1 and len(box) == 1 else None

    def __call__(self, actions: np.ndarray) -> list[tuple | dict]:
        """``to_env`` of each row of a batch."""
        return [self.to_env(row) for row in np.asarray(actions).reshape(-1, 1 + self.space.box_size)]

    def to_env(self, action: Any) -> tuple | dict:
        action = np.asarray(action, np.float64).reshape(-1)
        choice = int(np.clip(round(float(action[0])), 0, self.choices.n - 1)) + int(self.choices.start)
        box = (self._low + (np.clip(action[1:], -1.0, 1.0) + 1.0) * self._half).astype(self.box_space.dtype)
        if isinstance(self.env_space, gym.spaces.Dict):
            return {self._discrete: choice, self._box: box}
        return tuple(choice if k == self._discrete else box for k in range(2))


class PointModes(gym.Env):
    """A point on a plane that reaches a goal by picking a mode and a push each step (the project's own small
    hybrid task): ``walk`` moves it by 0.1 x push, ``jump`` by 0.5 x push at a cost of 0.05. Reward: minus the
    distance to the goal, minus the jump's cost; 40 steps. Observation ``[position, goal]``; action
    ``(mode, push in [-1, 1]^2)`` (``layout='box_first'``: ``(push, mode)``; ``'dict'``: ``{'mode', 'push'}``), or
    with ``relaxed=True`` one Box ``[mode score, push]`` (jump where the score is positive): the same task for plain
    SAC."""

    STEP = (0.1, 0.5)
    JUMP_COST = 0.05

    def __init__(self, relaxed: bool = False, layout: str = 'tuple') -> None:
        self.relaxed, self.layout = relaxed, layout
        self.observation_space = gym.spaces.Box(-2.0, 2.0, (4,), np.float32)
        mode, push = gym.spaces.Discrete(2), gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32) if relaxed else \
            gym.spaces.Dict(mode=mode, push=push) if layout == 'dict' else \
            gym.spaces.Tuple((push, mode) if layout == 'box_first' else (mode, push))

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.position = self.np_random.uniform(-1.0, 1.0, 2)
        self.goal = self.np_random.uniform(-1.0, 1.0, 2)
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.relaxed:
            action = np.asarray(action, np.float64)
            mode, push = int(action[0] > 0), action[1:]
        else:
            mode, push = (action['mode'], action['push']) if self.layout == 'dict' else \
                action[::-1] if self.layout == 'box_first' else action
            mode, push = int(mode), np.asarray(push, np.float64)
        self.position = np.clip(self.position + self.STEP[mode] * np.clip(push, -1.0, 1.0), -2.0, 2.0)
        distance = float(np.linalg.norm(self.position - self.goal))
        return self._obs(), -distance - self.JUMP_COST * mode, False, False, {'jumped': mode}

    def _obs(self) -> np.ndarray:
        return np.concatenate([self.position, self.goal]).astype(np.float32)


if 'PointModes-v0' not in gym.registry:
    gym.register('PointModes-v0', entry_point='envs.hybrid:PointModes', max_episode_steps=40)
