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


def preprocess_learn_batch(data: list[dict] | Batch | dict, device: str | torch.device | None = 'cpu',
                           ignore_done: bool = False, use_priority_IS_weight: bool = False,
                           nstep_reward: bool = False, reward_dims: int | None = None) -> Batch:
    """Collate (if given a list), move to ``device`` (None: stay), and bring the fields to the learn step's shapes.

    ``reward`` and ``done`` become float ``[B]`` (``[B, 1]`` is squeezed; anything else is an error naming the
    field), ``done`` is zeroed under ``ignore_done``, and integer ``[B, 1]`` (discrete) actions become ``[B]``.
    ``weight`` is the importance-sampling weight (``priority_IS``, or DI-engine's older ``IS``) when
    ``use_priority_IS_weight``; otherwise the transitions' own ``weight``, or a scalar 1 where they have none.
    ``nstep_reward`` leaves a ``[B, n]`` reward as it is; ``reward_dims`` D expects a ``[B, D]`` reward (a
    multi-dimensional one).
    """
    batch = default_collate(list(data)) if isinstance(data, (list, tuple)) else data
    batch = batch if isinstance(batch, Batch) else make_batch(batch)
    if device is not None:
        batch = batch.to(device)
    for name in ('reward', 'done'):
        if name not in batch:
            raise ValueError(f"a learn batch needs a {name!r} field; it has {sorted(batch.keys())}")
    dtype = torch.get_default_dtype()
    if reward_dims is not None and tuple(batch.reward.shape[1:]) != (reward_dims,):
        raise ValueError(f"learn batch field 'reward' has shape {tuple(batch.reward.shape)}; expected [B, "
                         f"{reward_dims}] (a reward of {reward_dims} dimensions, policy.reward_weights)")
    vector = nstep_reward or reward_dims is not None
    batch.reward = batch.reward.to(dtype) if vector else _vector(batch.reward, 'reward').to(dtype)
    done = _vector(batch.done, 'done')
    if done.shape[0] != batch.reward.shape[0]:
        raise ValueError(f"learn batch fields 'done' {tuple(done.shape)} and 'reward' {tuple(batch.reward.shape)} "
                         f"hold different numbers of transitions")
    batch.done = torch.zeros_like(done, dtype=dtype) if ignore_done else done.to(dtype)
    if 'action' in batch and not batch.action.is_floating_point() and batch.action.dim() == 2 \
            and batch.action.shape[1] == 1:
        batch.action = batch.action.squeeze(1)
    if use_priority_IS_weight:
        key = next((k for k in ('priority_IS', 'IS') if k in batch), None)
        if key is None:
            raise ValueError("priority_IS_weight=True but the batch has no 'priority_IS' field (the importance-"
                             "sampling weight); use a 'priority' replay buffer or set priority_IS_weight=False")
        batch.weight = _vector(batch[key], key).to(dtype)
    elif 'weight' in batch:  # the transitions' own (a 0-d weight is an already preprocessed batch's 1)
        batch.weight = (batch.weight if batch.weight.dim() == 0 else _vector(batch.weight, 'weight')).to(dtype)
    else:
        batch.weight = _one(dtype, batch.reward.device)
    return batch


_ONES: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}


def _one(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A 0-d 1 of ``dtype`` on ``device``, made once (every learn step's weight where transitions have none: a
    kernel launch per step on a GPU otherwise); never written to."""
    one = _ONES.get((dtype, device))
    if one is None:
        one = _ONES[(dtype, device)] = torch.ones((), dtype=dtype, device=device)
    return one


def _vector(value: torch.Tensor, name: str) -> torch.Tensor:
    """``[B]`` from ``[B]`` or ``[B, 1]``; never let a ``[B, 1]`` field broadcast against ``[B]`` into ``[B, B]``."""
    if value.dim() == 2 and value.shape[1] == 1:
        return value.squeeze(1)
    if value.dim() != 1:
        raise ValueError(f"learn batch field {name!r} has shape {tuple(value.shape)}; expected [B] or [B, 1] "
                         f"(one value per transition)")
    return value
