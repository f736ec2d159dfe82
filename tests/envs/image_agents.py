"""A PettingZoo parallel env whose two agents see 12x12 RGB images (as pistonball's pistons do): each image is bright
where its agent's target is, and an agent is rewarded ``-(action - target)^2`` for 8 steps. ``shrink`` is a user's
wrapper of the parallel env: grey, mean-pooled to 4x4 and flattened into 16 numbers in [0, 1]."""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils import BaseParallelWrapper
from pettingzoo.utils.env import ParallelEnv

SIZE, CYCLES = 12, 8


class ImageAgents(ParallelEnv):
    metadata = {'name': 'image_agents_v0'}

    def __init__(self) -> None:
        self.possible_agents, self.agents = ['left', 'right'], []
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> spaces.Box:
        return spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8)

    def action_space(self, agent: str) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _image(self, agent: str) -> np.ndarray:
        image = np.zeros((SIZE, SIZE, 3), np.uint8)
        column = int((self._targets[agent] + 1) / 2 * (SIZE - 1))
        image[:, column] = 255
        return image

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._targets = {agent: float(self._rng.uniform(-1, 1)) for agent in self.possible_agents}
        self.t, self.agents = 0, list(self.possible_agents)
        return {agent: self._image(agent) for agent in self.agents}, {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        rewards = {agent: -float((np.asarray(a).reshape(-1)[0] - self._targets[agent]) ** 2)
                   for agent, a in actions.items()}
        ended = {agent: self.t >= CYCLES for agent in actions}
        if self.t >= CYCLES:
            self.agents = []
        return ({agent: self._image(agent) for agent in actions}, rewards, dict.fromkeys(actions, False), ended,
                {agent: {} for agent in actions})


def parallel_env() -> ImageAgents:
    return ImageAgents()


class _Shrink(BaseParallelWrapper):
    def __init__(self, env: ParallelEnv, pool: int) -> None:
        super().__init__(env)
        self.pool = pool

    def observation_space(self, agent: str) -> spaces.Box:
        side = self.env.observation_space(agent).shape[0] // self.pool
        return spaces.Box(0.0, 1.0, (side * side,), np.float32)

    def _shrink(self, image: np.ndarray) -> np.ndarray:
        grey = image.mean(-1) / 255.0
        side = grey.shape[0] // self.pool
        return grey.reshape(side, self.pool, side, self.pool).mean((1, 3)).reshape(-1).astype(np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return {agent: self._shrink(obs) for agent, obs in observations.items()}, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, *rest = self.env.step(actions)
        return ({agent: self._shrink(obs) for agent, obs in observations.items()}, *rest)


def shrink(env: ParallelEnv, pool: int = 3) -> ParallelEnv:
    """Grey, mean-pooled by ``pool`` and flattened: 12x12 RGB images become 16 numbers."""
    return _Shrink(env, pool)
