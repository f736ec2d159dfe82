"""Goal-conditioned tasks (gymnasium-robotics' convention): a Dict observation of ``observation``, ``achieved_goal``
and ``desired_goal``, a sparse reward from ``compute_reward``, ``is_success`` in the info. ``PointGoal-v0``: a point
in the plane to move onto a goal, the project's small task for hindsight replay (``policy.other.replay_buffer.her``).
"""
from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np

from ding_lite.registry import ENV_REGISTRY
from ding_lite.utils.default_config import ConfigError
from .adapt import is_image
from .gymnasium_env import GymnasiumEnv

GOAL_KEYS = ('observation', 'achieved_goal', 'desired_goal')


class PointGoal(gym.Env):
    """A point in ``[-1, 1]^2`` moved by at most ``step_size`` per axis and step toward a goal drawn uniformly in the
    square: reward 0 within ``distance_threshold`` of it, else -1 (Fetch's sparse reward); 50 steps an episode,
    never terminated (the goal is to get there and stay). ``discrete``: 5 actions (stay, +x, -x, +y, -y)."""

    metadata = {'render_modes': []}

    def __init__(self, step_size: float = 0.05, distance_threshold: float = 0.05, discrete: bool = False) -> None:
        self.step_size, self.distance_threshold, self.discrete = step_size, distance_threshold, discrete
        box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = gym.spaces.Dict({key: box for key in GOAL_KEYS})
        self.action_space = gym.spaces.Discrete(5) if discrete else gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._moves = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], np.float32)
        self._pos = self._goal = np.zeros(2, np.float32)

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        """0 where the achieved goal is within the threshold of the desired one, else -1 (rows of a batch alike)."""
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance > self.distance_threshold).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self._pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self._goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        move = self._moves[int(action)] if self.discrete else np.clip(np.asarray(action, np.float32), -1, 1)
        self._pos = np.clip(self._pos + self.step_size * move.reshape(2), -1, 1).astype(np.float32)
        reward = float(self.compute_reward(self._pos, self._goal, {}))
        return self._obs(), reward, False, False, {'is_success': float(reward == 0.0)}

    def _obs(self) -> dict[str, np.ndarray]:
        return {'observation': self._pos.copy(), 'achieved_goal': self._pos.copy(), 'desired_goal': self._goal.copy()}


def goal_layout(env: Any, name: str) -> tuple[slice, slice, Callable[..., np.ndarray]]:
    """``(achieved, desired, compute_reward)``: where a goal-conditioned env's achieved and desired goals sit in its
    flattened observation, and its reward of goals (gymnasium's ``compute_reward``, vectorised over rows); a
    ``ConfigError`` naming what is missing for any other env."""
    adapter = getattr(env, 'obs_adapter', None)
    space = adapter.source if adapter is not None else getattr(env, 'observation_space', None)
    keys = list(space.spaces) if isinstance(space, gym.spaces.Dict) else []
    if not set(GOAL_KEYS) <= set(keys):
        raise ConfigError(f"policy.other.replay_buffer.her relabels goals, but the observations of env {name} are "
                          f"{space}, not a Dict with keys {list(GOAL_KEYS)} (gymnasium-robotics' goal-conditioned envs)")
    if adapter is None or adapter.identity or any(isinstance(sub, gym.spaces.Dict) or is_image(sub)
                                                  for sub in space.spaces.values()):
        raise ConfigError(f"policy.other.replay_buffer.her needs the Dict observation of env {name} flattened into one "
                          f"vector (Box keys, no images); it is {space}")
    owner = next((e for e in (getattr(env, '_env', None), getattr(env, 'env', None), env)
                  if e is not None and hasattr(getattr(e, 'unwrapped', e), 'compute_reward')), None)
    if owner is None:
        raise ConfigError(f"policy.other.replay_buffer.her recomputes rewards with the env's compute_reward("
                          f"achieved_goal, desired_goal, info), which env {name} does not have")
    sizes = [gym.spaces.flatdim(space[key]) for key in keys]
    ends = dict(zip(keys, np.cumsum(sizes).tolist()))
    where = {key: slice(ends[key] - size, ends[key]) for key, size in zip(keys, sizes)}
    return where['achieved_goal'], where['desired_goal'], getattr(owner, 'unwrapped', owner).compute_reward


if 'PointGoal-v0' not in gym.registry:
    gym.register('PointGoal-v0', entry_point='envs.goal:PointGoal', max_episode_steps=50)


@ENV_REGISTRY.register('point_goal')
class PointGoalEnv(GymnasiumEnv):
    """``PointGoal-v0`` (``env_kwargs=dict(discrete=True)`` for discrete SAC): its Dict observation is flattened for
    the models; hindsight replay relabels its goal."""

    config = dict(env_id='PointGoal-v0')
