"""Adapter from any gymnasium env to ``BaseEnv``."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.registry import ENV_REGISTRY
from .base_env import BaseEnv, BaseEnvTimestep


@ENV_REGISTRY.register('gymnasium')
class GymnasiumEnv(BaseEnv):
    """Wraps ``gymnasium.make(env_id)``: float32 observations, actions in [-1, 1] scaled to Box bounds.

    With ``act_scale`` the env presents a [-1, 1] Box action space (what tanh policies emit). Seeding:
    ``dynamic_seed`` gives every episode a new seed drawn from the env's seeded generator; otherwise every
    episode starts from the same seed (DI-engine's evaluator convention).
    """

    config = dict(
        env_id=None,
        act_scale=True,           # map actions from [-1, 1] into the Box bounds
        env_kwargs=dict(),        # passed to gymnasium.make
    )

    def __init__(self, cfg: dict | None = None) -> None:
        self._cfg = EasyDict(self.default_config(), **(cfg or {}))
        if not self._cfg.env_id:
            raise ValueError(f"{type(self).__name__} needs env.env_id (a gymnasium id such as 'Pendulum-v1')")
        try:
            self._env = gym.make(self._cfg.env_id, **(self._cfg.env_kwargs or {}))
        except gym.error.Error as error:
            raise ValueError(f"cannot make gymnasium env {self._cfg.env_id!r}: {error}") from error
        space = self._env.action_space
        self._scale = bool(self._cfg.act_scale) and isinstance(space, gym.spaces.Box)
        self._action_space = gym.spaces.Box(-1.0, 1.0, space.shape, np.float32) if self._scale else space
        self._half_range = 0.5 * (space.high - space.low) if self._scale else None
        self._seed, self._dynamic_seed, self._rng = None, True, np.random.default_rng()
        self._episode_return = 0.0

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed, self._dynamic_seed = int(seed), dynamic_seed
        self._rng = np.random.default_rng(self._seed)
        self._action_space.seed(self._seed)

    def reset(self) -> np.ndarray:
        if self._seed is None:
            seed = None
        else:
            seed = int(self._rng.integers(2 ** 31)) if self._dynamic_seed else self._seed
        obs, _ = self._env.reset(seed=seed)
        self._episode_return = 0.0
        return self._obs(obs)

    def step(self, action: Any) -> BaseEnvTimestep:
        obs, reward, terminated, truncated, info = self._env.step(self._action(action))
        self._episode_return += float(reward)
        done = bool(terminated or truncated)
        info = dict(info, **{'TimeLimit.truncated': bool(truncated and not terminated)})
        if done:
            info['eval_episode_return'] = self._episode_return
        return BaseEnvTimestep(self._obs(obs), np.float32(reward), done, info)

    def _action(self, action: Any) -> Any:
        action = np.asarray(action.cpu() if hasattr(action, 'cpu') else action)
        space = self._env.action_space
        if isinstance(space, gym.spaces.Discrete):
            return int(action.reshape(-1)[0]) if action.size == 1 else action
        if isinstance(space, gym.spaces.Box):
            action = action.astype(space.dtype).reshape(space.shape)
            if self._scale:  # two ufuncs: np.clip's Python wrapper costs more than the arithmetic here
                action = space.low + (np.minimum(np.maximum(action, -1.0), 1.0) + 1.0) * self._half_range
            return action
        return action

    @staticmethod
    def _obs(obs: Any) -> Any:
        if isinstance(obs, dict):
            return {k: GymnasiumEnv._obs(v) for k, v in obs.items()}
        obs = np.asarray(obs)
        return obs.astype(np.float32) if obs.dtype == np.float64 else obs

    def close(self) -> None:
        self._env.close()

    @property
    def observation_space(self) -> gym.Space:
        return self._env.observation_space

    @property
    def action_space(self) -> gym.Space:
        return self._action_space

    @property
    def reward_space(self) -> gym.Space:
        return gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    @property
    def env_id(self) -> str:
        return self._cfg.env_id

    def __repr__(self) -> str:
        return f"GymnasiumEnv({self._cfg.env_id!r})"


@ENV_REGISTRY.register('pendulum')
class PendulumEnv(GymnasiumEnv):
    """Pendulum-v1 (200-step episodes, truncated by time limit only)."""

    config = dict(env_id='Pendulum-v1')


@ENV_REGISTRY.register('cartpole')
class CartPoleEnv(GymnasiumEnv):
    """CartPole-v1 (terminates on failure, truncated at 500 steps)."""

    config = dict(env_id='CartPole-v1')
