"""A collection round of one collector or of many stepped together (a run of many seeds): at each env step one
policy forward acts for the ready envs of every collector still short of its samples, and each env step is handled
as columns; the round's transition dicts cut from those columns where the caller wants DI-engine's list."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from ..data.collate import default_collate, transitions


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


def collect_batches(collectors: list[Any], n_sample: int | None, train_iter: int = 0,
                    policy_kwargs: dict | None = None, forward: Forward | None = None,
                    as_arrays: bool = False) -> list[dict[str, Any] | list[Any]]:
    """``collect_batch`` of each collector, stepped together: at each env step one ``forward`` call (default: each
    collector's own policy) acts for the ready envs of every collector still short of ``n_sample``. Where one of
    them cannot step as columns, each collects on its own (one transition at a time). ``as_arrays``: the columns
    as numpy arrays (a list of transitions where they were collected one at a time)."""
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
        for k, finish in zip(todo, finishes):
            chunks[k].append(finish())
            counts[k] += len(chunks[k][-1]['reward'])
        todo = [k for k in todo if counts[k] < n_sample]
    batches = []
    for collector, parts in zip(collectors, chunks):
        collector.collect_time = time.perf_counter() - start
        collector._maybe_log(train_iter)
        arrays = parts[0] if len(parts) == 1 else {k: np.concatenate([c[k] for c in parts]) for k in parts[0]}
        batches.append(arrays if as_arrays else {k: torch.from_numpy(v) for k, v in arrays.items()})
    return batches
