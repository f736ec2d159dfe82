"""Each env's recurrent memory, kept by the collector and the evaluator for a recurrent policy."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor


class EnvMemory:
    """Per env: the recurrent state before its next action, its previous action and reward (where the model reads
    them), and whether its episode has just started; zero at each episode's start. ``spec``: the model's
    ``memory`` (``state_size``; ``prev_action``: None or the action's ``(shape, dtype)``; ``prev_reward``;
    ``save_state``: transitions keep the state)."""

    def __init__(self, spec: dict[str, Any], env_num: int) -> None:
        self.spec = dict(spec)
        self.state = np.zeros((env_num, spec['state_size']), np.float32)
        action = spec['prev_action']
        self.prev_action = np.zeros((env_num, *action[0]), action[1]) if action else None
        self.prev_reward = np.zeros(env_num, np.float32)
        self.start = np.ones(env_num, bool)

    def inputs(self, ids: list[int]) -> dict[str, Tensor]:
        """The ``memory`` keyword of a forward for the envs ``ids``."""
        inputs = {'state': torch.from_numpy(self.state[ids])}
        if self.spec['prev_action']:
            inputs['prev_action'] = torch.from_numpy(self.prev_action[ids])
        if self.spec['prev_reward']:
            inputs['prev_reward'] = torch.from_numpy(self.prev_reward[ids])
        return inputs

    def acted(self, ids: list[int], state: Tensor) -> dict[str, np.ndarray]:
        """The envs ``ids`` acted and their state is now ``state``: the columns their transitions keep (the state
        before acting, env id, episode start, the previous action and reward read)."""
        columns = {'env_id': np.asarray(ids, np.int64), 'episode_start': self.start[ids]}
        if self.spec.get('save_state', True):  # else sequences start from a zero state
            columns['state'] = self.state[ids]
        if self.spec['prev_action']:
            columns['prev_action'] = self.prev_action[ids]
        if self.spec['prev_reward']:
            columns['prev_reward'] = self.prev_reward[ids]
        self.state[ids] = state.numpy(force=True)
        return columns

    def stepped(self, ids: list[int], action: np.ndarray, reward: np.ndarray) -> None:
        """The envs ``ids`` took ``action`` (rows) and got ``reward``."""
        if self.prev_action is not None:
            self.prev_action[ids] = action
        self.prev_reward[ids] = reward
        self.start[ids] = False

    def reset(self, env_id: int | None = None) -> None:
        """Zero the memory of ``env_id`` (all envs where None): its next step starts an episode."""
        rows = slice(None) if env_id is None else env_id
        self.state[rows] = 0
        self.prev_reward[rows] = 0
        self.start[rows] = True
        if self.prev_action is not None:
            self.prev_action[rows] = 0

    def state_dict(self) -> dict[str, Any]:
        action = None if self.prev_action is None else self.prev_action.copy()
        return {'state': self.state.copy(), 'prev_action': action, 'prev_reward': self.prev_reward.copy(),
                'start': self.start.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        array = lambda v: v.numpy().copy() if isinstance(v, Tensor) else np.array(v)  # noqa: E731 (a checkpoint's)
        self.state, self.prev_reward = array(state['state']), array(state['prev_reward'])
        self.start = array(state['start'])
        self.prev_action = None if state['prev_action'] is None else array(state['prev_action'])
