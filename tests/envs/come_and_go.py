"""A PettingZoo parallel env whose agents come and go: 'a' runs the whole episode (10 steps, then a time limit),
'b' terminates at its 4th step, 'c' joins after the 3rd step. It raises on an action for an agent that is not live
and on a live agent without one. Each agent is rewarded for acting its own target: ``-(action - target)^2``."""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

TARGETS = {'a': 0.5, 'b': -0.5, 'c': 0.0}
CYCLES, B_ENDS_AT, C_JOINS_AFTER = 10, 4, 3


class ComeAndGo(ParallelEnv):
    metadata = {'name': 'come_and_go_v0'}

    def __init__(self, cycles: int = CYCLES, keep_ended: bool = False) -> None:
        self.possible_agents = list(TARGETS)
        self.cycles, self.keep_ended = cycles, keep_ended  # keep_ended: 'b' stays in agents after it ended
        self.agents: list[str] = []
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> spaces.Box:
        return spaces.Box(-np.inf, np.inf, (3,), np.float32)

    def action_space(self, agent: str) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _obs(self, agent: str) -> np.ndarray:
        index = self.possible_agents.index(agent)
        return np.array([self.t / self.cycles, index, self._noise[index]], np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._noise = self._rng.normal(0, 0.1, len(self.possible_agents))
        self.t, self.ended = 0, set()
        self.agents = ['a', 'b']
        return {agent: self._obs(agent) for agent in self.agents}, {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        live = set(self.agents) - self.ended
        if set(actions) != live:
            raise ValueError(f"actions for {sorted(actions)}, but the live agents are {sorted(live)}")
        self.t += 1
        rewards = {agent: -float((np.asarray(action).reshape(-1)[0] - TARGETS[agent]) ** 2)
                   for agent, action in actions.items()}
        terminations = {agent: agent == 'b' and self.t == B_ENDS_AT for agent in actions}
        truncations = {agent: self.t >= self.cycles for agent in actions}
        observations = {agent: self._obs(agent) for agent in actions}
        infos = {agent: {'step': self.t} for agent in actions}
        gone = {agent for agent in actions if terminations[agent] or truncations[agent]}
        if self.keep_ended and self.t < self.cycles:
            self.ended |= gone
        else:
            self.agents = [agent for agent in self.agents if agent not in gone]
        if self.t == C_JOINS_AFTER:
            self.agents.append('c')
            observations['c'] = self._obs('c')
        return observations, rewards, terminations, truncations, infos


def parallel_env(**kwargs: Any) -> ComeAndGo:
    return ComeAndGo(**kwargs)
