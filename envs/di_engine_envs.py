"""DI-engine's env types over the gymnasium adapter: ``pendulum``, ``cartpole``, ``lunarlander``, ``bipedalwalker`` and
``mujoco``, which take DI-engine's gym-era ids."""
from __future__ import annotations

from ding_lite.registry import ENV_REGISTRY
from .gymnasium_env import GymnasiumEnv


class DIEngineEnv(GymnasiumEnv):
    """Base of DI-engine's env types: they take DI-engine's gym-era ids (``GYM_ERA_IDS``)."""

    map_gym_era_ids = True


@ENV_REGISTRY.register('pendulum')
class PendulumEnv(DIEngineEnv):
    """Pendulum-v1 (200-step episodes, truncated by time limit only)."""

    config = dict(env_id='Pendulum-v1')


@ENV_REGISTRY.register('cartpole')
class CartPoleEnv(DIEngineEnv):
    """CartPole-v1 (terminates on failure, truncated at 500 steps)."""

    config = dict(env_id='CartPole-v1')


@ENV_REGISTRY.register('lunarlander')
class LunarLanderEnv(DIEngineEnv):
    """LunarLander-v3 (Discrete(4)), or ``env_id='LunarLanderContinuous-v3'``."""

    config = dict(env_id='LunarLander-v3')


@ENV_REGISTRY.register('bipedalwalker')
class BipedalWalkerEnv(DIEngineEnv):
    """BipedalWalker-v3, optionally with DI-engine's reward clip."""

    config = dict(env_id='BipedalWalker-v3', rew_clip=False)  # True: the -100 fall penalty is learned as -10

    def _train_reward(self, reward: float) -> float:
        return max(-10.0, reward) if self._cfg.rew_clip else reward


@ENV_REGISTRY.register('mujoco')
class MujocoEnv(DIEngineEnv):
    """A gymnasium MuJoCo ``env_id`` (gym-era v2/v3 ids run on v5, Ant and Humanoid on v4)."""

