"""Hindsight experience replay (Andrychowicz et al., 2017) as SB3's ``HerReplayBuffer`` does it: of each sample,
``n_sampled_goal / (n_sampled_goal + 1)`` of the transitions from finished episodes have their desired goal replaced
by a goal achieved later in the episode ('future'), at its end ('final') or anywhere in it ('episode'), and their
reward recomputed by the env's ``compute_reward``. Observations are stored flat (the env's Dict flattened): the goal
layout (where the achieved and desired goals sit in the vector) comes from the env, through ``bind_goals``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from ..registry import BUFFER_REGISTRY
from ..utils.default_config import ConfigError
from .buffer import ReplayBuffer
from .collate import Batch

STRATEGIES = ('future', 'final', 'episode')
RewardFn = Callable[[np.ndarray, np.ndarray, Any], np.ndarray]  # (achieved [n, g], desired [n, g], infos) -> [n]


def check_her(her: Any) -> dict[str, Any]:
    """``her`` (``policy.other.replay_buffer.her``) with its defaults, or a ``ConfigError`` naming what is wrong."""
    if not isinstance(her, dict):
        raise ConfigError(f"policy.other.replay_buffer.her must be a dict(n_sampled_goal=4, goal_selection_strategy="
                          f"'future'), got {her!r}")
    unknown = set(her) - {'n_sampled_goal', 'goal_selection_strategy'}
    if unknown:
        raise ConfigError(f"policy.other.replay_buffer.her has unknown keys {sorted(unknown)}; it takes "
                          f"n_sampled_goal and goal_selection_strategy")
    her = {'n_sampled_goal': 4, 'goal_selection_strategy': 'future', **her}
    n = her['n_sampled_goal']
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        raise ConfigError(f"policy.other.replay_buffer.her.n_sampled_goal must be an int >= 1 (relabelled "
                          f"transitions per real one), got {n!r}")
    if her['goal_selection_strategy'] not in STRATEGIES:
        raise ConfigError(f"policy.other.replay_buffer.her.goal_selection_strategy must be one of {STRATEGIES}, got "
                          f"{her['goal_selection_strategy']!r}")
    return her


@BUFFER_REGISTRY.register('her')
class HerReplayBuffer(ReplayBuffer):
    """A uniform buffer whose samples relabel goals (``her=dict(n_sampled_goal, goal_selection_strategy)``); its
    transitions carry ``env_id`` and ``episode_start`` (the collector adds them), which trace each env's episodes."""

    episode_fields = binds_goals = True

    config = dict(
        type='her',                               # the registered buffer name
        her=dict(
            n_sampled_goal=4,                     # relabelled transitions per real one: 4 of 5 in a sample
            goal_selection_strategy='future',     # the goal: achieved later in the episode, at its end ('final')
                                                  # or anywhere in it ('episode')
        ),
    )

    def __init__(self, cfg: dict | None = None, tb_logger: Any = None, exp_name: str = 'default_experiment') -> None:
        super().__init__(cfg, tb_logger, exp_name)
        if self.sequence_steps > 1:
            raise ConfigError("hindsight replay relabels single transitions; a recurrent model's sequences "
                              "(model.rnn) are not relabelled: set policy.other.replay_buffer.her=None")
        her = check_her(self._cfg.her)
        self.ratio, self.strategy = 1 - 1 / (her['n_sampled_goal'] + 1), her['goal_selection_strategy']
        self._goals: tuple[slice, slice, RewardFn] | None = None
        self._clear_episodes()

    def bind_goals(self, achieved: slice, desired: slice, compute_reward: RewardFn) -> None:
        """Where the achieved and desired goals sit in a (flat) observation, and the env's reward of a goal."""
        self._goals = (achieved, desired, compute_reward)

    def _clear_episodes(self) -> None:
        # each slot's place in the ring of finished episodes' steps (-1: its episode has not ended), and the places of
        # its episode's first and last steps there; an episode's steps are appended to that ring when it ends
        self._place = np.full(self.size, -1, np.int64)
        self._first, self._last = np.zeros(self.size, np.int64), np.zeros(self.size, np.int64)
        self._ring, self._appended = np.zeros(self.size, np.int64), 0
        self._stamp, self._pushed = np.zeros(self.size, np.int64), 0  # when each slot was written
        self._open: dict[int, list[tuple[int, int]]] = {}  # env id -> its running episode's (slot, stamp)

    def clear(self) -> None:
        super().clear()
        self._clear_episodes()

    def _check_schema(self, flat: dict[tuple[str, ...], Tensor]) -> None:
        if not {('env_id',), ('episode_start',)} <= set(flat):
            raise ValueError(f"a hindsight replay buffer needs env_id and episode_start in every transition (the "
                             f"collector adds them where policy.other.replay_buffer.her is set); got fields "
                             f"{sorted('.'.join(p) for p in flat)}")
        super()._check_schema(flat)

    def _on_write(self, index: Tensor, flat: dict[tuple[str, ...], Tensor]) -> None:
        self._track(index.cpu().numpy(), flat[('env_id',)].cpu().numpy().reshape(-1),
                    flat[('episode_start',)].cpu().numpy().reshape(-1))

    def _track(self, slots: np.ndarray, env_ids: np.ndarray, starts: np.ndarray) -> None:
        """Slots written in this order: each env's running episode grows, and ends where the env starts another."""
        for slot, env, start in zip(slots.tolist(), env_ids.tolist(), starts.tolist()):
            self._place[slot] = -1  # an overwritten step leaves its episode
            self._pushed += 1
            self._stamp[slot] = self._pushed
            if start and self._open.get(env):
                self._finish(self._open.pop(env))
            self._open.setdefault(env, []).append((slot, self._pushed))

    def _finish(self, steps: list[tuple[int, int]]) -> None:
        slots = np.array([slot for slot, stamp in steps if self._stamp[slot] == stamp], np.int64)
        if not len(slots):
            return
        places = self._appended + np.arange(len(slots))
        self._ring[places % self.size] = slots
        self._place[slots], self._first[slots], self._last[slots] = places, places[0], places[-1]
        self._appended += len(slots)

    def sample(self, batch_size: int, cur_learner_iter: int = -1) -> Batch:
        """A uniform sample whose rows from finished episodes are relabelled with probability ``ratio``."""
        index, extra = self._draw(batch_size)
        return self.relabel(self._gather(index, extra), index)

    def relabel(self, batch: Batch, index: Tensor) -> Batch:
        """``batch`` (the transitions of slots ``index``) with hindsight goals in some rows: their observations'
        desired goal and their reward changed."""
        if self._goals is None:
            raise RuntimeError("this hindsight replay buffer has no goal layout: the pipeline binds the env's "
                               "(bind_goals) before it samples")
        achieved, desired, compute_reward = self._goals
        slots = index.cpu().numpy()
        draws = torch.rand((2, len(slots)), device=self.device).cpu().numpy().astype(np.float64)
        rows = np.flatnonzero((self._place[slots] >= 0) & (draws[0] < self.ratio))
        if not len(rows):
            return batch
        goals = self._storage[('next_obs',)][torch.as_tensor(self._goal_slots(slots[rows], draws[1][rows]),
                                                              device=self.device)][:, achieved]
        at = torch.as_tensor(rows, device=self.device)
        for key in ('obs', 'next_obs'):
            value = batch[key].clone()
            value[at, desired] = goals.to(value.dtype)
            batch[key] = value
        reward = compute_reward(batch.next_obs[at][:, achieved].cpu().numpy(), goals.cpu().numpy(),
                                [{} for _ in rows])
        batch.reward = batch.reward.clone()
        batch.reward[at] = torch.as_tensor(np.asarray(reward), dtype=batch.reward.dtype,
                                           device=self.device).reshape(batch.reward[at].shape)
        return batch

    def _goal_slots(self, slots: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The slot whose achieved goal (of its next observation) each of ``slots`` takes, by the strategy."""
        place, first, last = self._place[slots], self._first[slots], self._last[slots]
        if self.strategy == 'final':
            chosen = last
        else:
            low = place if self.strategy == 'future' else first
            chosen = low + np.minimum((u * (last - low + 1)).astype(np.int64), last - low)
        candidate = self._ring[chosen % self.size]
        stale = self._place[candidate] != chosen  # an episode's first steps overwritten since ('episode')
        return np.where(stale, slots, candidate)

    def _load_extra_state(self, extra: dict[str, Any], slots: Tensor) -> None:
        """The episodes of the restored slots, traced again oldest first: as the pushes had traced them."""
        self._clear_episodes()
        if not self._storage:
            return
        order = ((self._ptr - self._count + torch.arange(self._count)) % self.size).to(self.device)
        self._track(order.cpu().numpy(), self._storage[('env_id',)][order].cpu().numpy().reshape(-1),
                    self._storage[('episode_start',)][order].cpu().numpy().reshape(-1))
