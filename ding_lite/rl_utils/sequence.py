"""Sequence batches (a recurrent model's) as the rows of a transition batch."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

import torch
from torch import Tensor

from ..model.recurrent import Memory
from .sample import preprocess_learn_batch

R2D2_ETA = 0.9  # a sequence's priority: eta * max |TD| + (1 - eta) * mean |TD| over its loss steps (R2D2)


def sequence_batch(data: Any, device: torch.device, burnin: int, normalize: Callable[[Tensor], Tensor],
                   state_size: int, **preprocess: Any) -> SimpleNamespace:
    """A buffer's sequences ``[B, T, ...]`` (``mask``, ``state`` and the previous action and reward at the first
    step) as a learn batch of ``B * T`` rows: ``obs``/``next_obs`` are ``Memory`` over the ``T + 1`` observations
    (the heads read steps ``0..T-1`` and ``1..T``), ``weight`` zero on the burn-in prefix and past an episode's end
    and scaled to mean 1, so that a weighted mean is the mean over the loss steps; without a stored ``state``, a zero
    one of ``state_size``. ``preprocess``: ``preprocess_learn_batch``'s keywords."""
    data = {k: v.to(device) for k, v in dict(data).items()}
    mask = data.pop('mask')
    batch_size, steps = mask.shape
    loss = mask & (torch.arange(steps, device=device) >= burnin)
    weight = loss.flatten().to(torch.get_default_dtype())
    weight = weight / weight.mean().clamp(min=1 / weight.numel())  # no host sync: an all-padding batch weighs 0
    obs = normalize(torch.cat([data['obs'][:, :1], data['next_obs']], 1))
    state = data['state'] if 'state' in data else torch.zeros(batch_size, state_size, device=device)
    inputs = {'obs': obs, 'state': state, 'burnin': burnin}
    if 'prev_action' in data:
        inputs['prev_action'] = torch.cat([data['prev_action'][:, None], data['action']], 1)
    if 'prev_reward' in data:
        inputs['prev_reward'] = torch.cat([data['prev_reward'][:, None], data['reward']], 1)
    rows = {k: data[k].flatten(0, 1) for k in ('action', 'reward', 'done')}
    for key in ('priority_IS', 'IS'):
        if key in data:
            rows[key] = data[key].repeat_interleave(steps)
    batch = preprocess_learn_batch(rows, None, **preprocess)
    return SimpleNamespace(obs=Memory(**inputs, part='cur', weight=weight), next_obs=Memory(**inputs, part='next'),
                           action=batch.action, reward=batch.reward, done=batch.done, weight=batch.weight * weight)


def sequence_priority(td: Tensor, weight: Tensor, batch_size: int) -> Tensor:
    """Each sequence's priority ``[B]`` from its rows' ``|TD|`` ``[B * T]`` and loss weights."""
    td, loss = td.reshape(batch_size, -1), weight.reshape(batch_size, -1) > 0
    steps = loss.sum(1).clamp(min=1)
    masked = td.masked_fill(~loss, 0)
    return R2D2_ETA * masked.max(1).values + (1 - R2D2_ETA) * masked.sum(1) / steps
