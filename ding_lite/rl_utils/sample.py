"""Turning collected transitions into training samples, and the learn-batch preprocessing shared by policies."""
from __future__ import annotations

from typing import Any

import torch

from ..data.collate import Batch, default_collate, make_batch


def get_train_sample(data: list[dict], unroll_len: int, last_fn_type: str = 'last') -> list[Any]:
    """Split a trajectory into samples of ``unroll_len`` consecutive transitions (each collated, time first).

    ``unroll_len == 1`` returns the transitions unchanged. A short remainder is handled by ``last_fn_type``:
    ``'last'`` (the final sample overlaps the one before), ``'drop'``, or ``'null_padding'`` (zero transitions
    marked ``null=True``; real ones get ``null=False``).
    """
    if unroll_len < 1:
        raise ValueError(f"unroll_len must be >= 1, got {unroll_len}")
    if unroll_len == 1:
        return list(data)
    if last_fn_type not in ('last', 'drop', 'null_padding'):
        raise ValueError(f"last_fn_type must be 'last', 'drop' or 'null_padding', got {last_fn_type!r}")
    data = list(data)
    split = len(data) // unroll_len * unroll_len
    chunks = [data[i:i + unroll_len] for i in range(0, split, unroll_len)]
    residual = data[split:]
    if residual and last_fn_type == 'last':
        chunks.append(data[-unroll_len:])
    elif residual and last_fn_type == 'null_padding':
        chunks = [[dict(t, null=False) for t in chunk] for chunk in chunks]
        pad = {k: torch.zeros_like(torch.as_tensor(v)) for k, v in residual[-1].items()}
        chunks.append([dict(t, null=False) for t in residual] + [dict(pad, null=True)] * (unroll_len - len(residual)))
    return [default_collate(chunk) for chunk in chunks]


def preprocess_learn_batch(data: list[dict] | Batch | dict, device: str | torch.device = 'cpu',
                           ignore_done: bool = False, use_priority_IS_weight: bool = False) -> Batch:
    """Collate (if given a list) and move to ``device``; ``done`` as float, zeroed under ``ignore_done``.

    ``weight`` is the buffer's importance-sampling weight when ``use_priority_IS_weight``, else a scalar 1.
    """
    batch = default_collate(data) if isinstance(data, (list, tuple)) else data
    batch = (batch if isinstance(batch, Batch) else make_batch(batch)).to(device)
    batch.reward = batch.reward.to(torch.get_default_dtype())
    batch.done = torch.zeros_like(batch.reward) if ignore_done else batch.done.to(batch.reward.dtype)
    if use_priority_IS_weight:
        if 'weight' not in batch:
            raise ValueError("priority_IS_weight=True but the batch has no 'weight' field; "
                             "use a 'priority' replay buffer or set priority_IS_weight=False")
    else:
        batch.weight = torch.ones((), device=batch.reward.device)
    return batch
