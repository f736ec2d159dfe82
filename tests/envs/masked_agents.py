"""A PettingZoo parallel env of two agents with Discrete(3) actions and PettingZoo's masked observations
(``{'observation', 'action_mask'}``): each step one action is forbidden to each agent, and taking it raises. The
reward is 1 for the action the observation points at (always allowed), else 0; 8 steps an episode."""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

STEPS = 8


class MaskedAgents(ParallelEnv):
    metadata = {'name': 'masked_agents_v0'}

    def __init__(self) -> None:
        self.possible_agents = ['left', 'right']
        self.agents: list[str] = []
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> spaces.Dict:
        return spaces.Dict({'observation': spaces.Box(0.0, 1.0, (3,), np.float32),
                            'action_mask': spaces.Box(0, 1, (3,), np.int8)})

    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(3)

    def _observe(self) -> dict[str, Any]:
        self._good = {agent: int(self._rng.integers(3)) for agent in self.agents}
        self._bad = {agent: (good + 1 + int(self._rng.integers(2))) % 3 for agent, good in self._good.items()}
        out = {}
        for agent in self.agents:
            mask = np.ones(3, np.int8)
            mask[self._bad[agent]] = 0
            out[agent] = {'observation': np.eye(3, dtype=np.float32)[self._good[agent]], 'action_mask': mask}
        return out

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.t, self.agents = 0, list(self.possible_agents)
        return self._observe(), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        for agent, action in actions.items():
            if int(action) == self._bad[agent]:
                raise ValueError(f"agent {agent} took action {action}, which its mask forbids")
        self.t += 1
        rewards = {agent: float(int(action) == self._good[agent]) for agent, action in actions.items()}
        done = self.t >= STEPS
        observations = self._observe()
        flags = {agent: False for agent in actions}
        truncations = {agent: done for agent in actions}
        if done:
            self.agents = []
        return observations, rewards, flags, truncations, {agent: {} for agent in actions}


def parallel_env(**kwargs: Any) -> MaskedAgents:
    return MaskedAgents(**kwargs)
