"""A collection round of one collector or of many stepped together (a run of many seeds): at each env step one
policy forward acts for the ready envs of every collector still short of its samples, and each env step is handled
as columns; the round's transition dicts cut from those columns where the caller wants DI-engine's list."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from ..data.collate import Rows, default_collate, to_float32, transitions
from .episode_totals import EpisodeTotals
from .finite_check import nonfinite_rows


# (stacked observations of the workers at these positions, the positions) -> the policy outputs, one each
Forward = Callable[[list[Tensor], list[int]], list[dict[str, Tensor]]]


def transition_rows(columns: dict[str, np.ndarray], output_keys: list[str]) -> list[dict[str, Any]]:
    """Transition dicts cut from a columnar batch, each field as the per-transition path gives it (``Transition``s:
    collated again untouched, they give the columns back)."""
    fields = {}
    for key, column in columns.items():
        if key in output_keys:
            fields[key] = torch.from_numpy(column).unbind(0)  # the policy's outputs: tensor rows
        elif key in ('reward', 'done') and column.ndim == 1:
            fields[key] = column.tolist()  # Python floats and bools
        else:
            fields[key] = list(column)  # array rows (observations), numpy scalars
    return transitions(columns, fields)


def _one_at_a_time(collectors: list[Any], n_sample: int | None, train_iter: int,
                   policy_kwargs: dict | None, as_arrays: bool) -> list[Any]:
    """``collect_batches`` one transition at a time, each collector on its own."""
    samples = [c.collect_alone(n_sample, train_iter, policy_kwargs) for c in collectors]
    return samples if as_arrays else [default_collate(s, as_batch=False) for s in samples]


def column_batch(obs: np.ndarray, next_obs: np.ndarray, columns: dict[str, np.ndarray], reward: np.ndarray,
                 terminated: np.ndarray) -> dict[str, np.ndarray]:
    """A step's transitions as columns (a row per env): ``done`` is ``terminated`` (an episode cut by a time limit
    still bootstraps), rewards float32."""
    return {'obs': obs, 'next_obs': next_obs, **columns, 'reward': reward.astype(np.float32), 'done': terminated}


class StepsTogether:
    """The collectors of a run of many seeds (one each, stepped in lockstep) counted together: their episode totals
    are rows of one ``EpisodeTotals``, and a step that every one of them took plainly (``_steps_plainly``: all its
    envs, unbroken) is checked for non-finite values and added to the totals in one pass over the seeds' columns;
    any other step each collector counts on its own."""

    def __init__(self, collectors: list[Any]) -> None:
        self.collectors = list(collectors)
        self._alike = len({(c._tally.gamma, c.norm_reward, c._env.env_num) for c in collectors}) == 1 and \
            all(isinstance(c._tally.gamma, float) for c in collectors)
        self._totals: EpisodeTotals | None = None

    def stepped(self, collectors: list[Any], steps: list[tuple]) -> dict[str, np.ndarray] | None:
        """The transitions of every collector's step ``steps[k]`` (``_stepped_columns``' arguments) as one batch of
        columns, collector k's in rows ``k * n ... (k + 1) * n``; None, counting nothing, where they did not step
        alike (each counts its own then)."""
        if not self._alike or len(collectors) != len(self.collectors) or \
                any(c is not own for c, own in zip(collectors, self.collectors)) or \
                not all(c._steps_plainly(ids, step) for c, (ids, _, _, step) in zip(collectors, steps)):
            return None
        members = [c._totals for c in collectors]
        if self._totals is None or not self._totals.holds(members):
            self._totals = EpisodeTotals.stack(members)
        reward = np.concatenate([step.reward for *_, step in steps])
        batch = column_batch(np.concatenate([obs for _, obs, _, _ in steps]),
                             to_float32(np.concatenate([step.obs for *_, step in steps])),
                             {k: np.concatenate([columns[k] for _, _, columns, _ in steps]) for k in steps[0][2]},
                             reward, np.concatenate([step.terminated for *_, step in steps]))
        if nonfinite_rows(batch) is not None:  # each collector raises, or drops its rows
            return None
        first = collectors[0]
        running = self._totals.add(slice(None), reward, first._tally, first.norm_reward)
        if running is not None:
            batch['running_return'] = running
        self._totals.length += 1
        for collector, (*_, step) in zip(collectors, steps):
            collector._count_step(step)
        return batch


class SeedBatches(list):
    """A round's batches of many collectors stepped together, batch k the rows ``k * n ... (k + 1) * n`` of one
    tensor per field (``stacked``, which a push of every seed's batch copies as it is), cut as they are read."""

    def __init__(self, stacked: dict[str, Tensor], count: int) -> None:
        n = len(stacked['reward']) // count
        super().__init__(Rows(stacked, slice(k * n, (k + 1) * n)) for k in range(count))
        self.stacked = stacked


def _seed_rows(part: dict[str, np.ndarray] | tuple) -> dict[str, np.ndarray]:
    """A collector's chunk of a round: its own columns, or its rows of a step taken together."""
    if isinstance(part, dict):
        return part
    joint, k, n = part
    return {key: value[k * n:(k + 1) * n] for key, value in joint.items()}


def _stacked_round(chunks: list[list[Any]]) -> dict[str, Tensor] | None:
    """Where every step of the round was taken together by every collector: the round's columns, collector k's
    rows ``k * m ... (k + 1) * m`` (m its transitions of the round); else None."""
    firsts = chunks[0]
    if not all(len(parts) == len(firsts) and all(isinstance(part, tuple) and part[0] is first[0]
                                                 for part, first in zip(parts, firsts)) for parts in chunks):
        return None
    count, steps = len(chunks), [joint for joint, _, _ in firsts]
    if len(steps) == 1:
        return {key: torch.from_numpy(value) for key, value in steps[0].items()}
    return {key: torch.from_numpy(np.concatenate([step[key].reshape(count, -1, *step[key].shape[1:])
                                                  for step in steps], axis=1).reshape(-1, *steps[0][key].shape[1:]))
            for key in steps[0]}


def collect_batches(collectors: list[Any], n_sample: int | None, train_iter: int = 0,
                    policy_kwargs: dict | None = None, forward: Forward | None = None,
                    as_arrays: bool = False, together: StepsTogether | None = None) -> list[dict[str, Any] | list[Any]]:
    """``collect_batch`` of each collector, stepped together: at each env step one ``forward`` call (default: each
    collector's own policy) acts for the ready envs of every collector still short of ``n_sample``. Where one of
    them cannot step as columns, each collects on its own (one transition at a time). ``as_arrays``: the columns
    as numpy arrays (a list of transitions where they were collected one at a time). ``together``: the collectors'
    steps counted in one pass where they step alike (a run of many seeds)."""
    keys = [c.round_keys() for c in collectors]
    if None in keys:
        return _one_at_a_time(collectors, n_sample, train_iter, policy_kwargs, as_arrays)
    if n_sample is None or n_sample <= 0:
        raise ValueError(f"collect needs a positive n_sample, got {n_sample!r}")
    chunks: list[list[dict[str, np.ndarray]]] = [[] for _ in collectors]
    counts, start = [0] * len(collectors), time.perf_counter()
    todo = list(range(len(collectors)))
    while todo:
        ready = [collectors[k]._ready_columns() for k in todo]
        if None in ready:  # observations of another form (dicts): per-env transitions
            if any(chunks):
                raise ValueError("the envs' observations stopped stacking into one array mid-collect")
            return _one_at_a_time(collectors, n_sample, train_iter, policy_kwargs, as_arrays)
        inputs = [torch.from_numpy(obs) for _, obs in ready]
        outputs = forward(inputs, todo) if forward is not None else \
            [collectors[k]._forward_rows(ids, o, policy_kwargs) for k, (ids, _), o in zip(todo, ready, inputs)]
        finishes = [collectors[k]._begin_step_columns(keys[k], ids, obs, output)  # every env's step sent, then
                    for k, (ids, obs), output in zip(todo, ready, outputs)]    # gathered: processes step at once
        steps = [finish() for finish in finishes]
        joint = together.stepped([collectors[k] for k in todo], steps) if together is not None else None
        for j, (k, step) in enumerate(zip(todo, steps)):
            part = collectors[k]._stepped_columns(*step) if joint is None else \
                (joint, j, len(joint['reward']) // len(todo))  # (its rows, taken when the round ends)
            chunks[k].append(part)
            counts[k] += part[2] if joint is not None else len(part['reward'])
        todo = [k for k in todo if counts[k] < n_sample]
    for collector in collectors:
        collector.collect_time = time.perf_counter() - start
        collector._maybe_log(train_iter)
    stacked = _stacked_round(chunks) if together is not None and not as_arrays else None
    if stacked is not None:
        return SeedBatches(stacked, len(collectors))
    batches = []
    for parts in chunks:
        parts = [_seed_rows(part) for part in parts]
        arrays = parts[0] if len(parts) == 1 else {k: np.concatenate([c[k] for c in parts]) for k in parts[0]}
        batches.append(arrays if as_arrays else {k: torch.from_numpy(v) for k, v in arrays.items()})
    return batches
