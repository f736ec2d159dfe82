"""What the SAC family reports beside its update: a learn step's statistics of the critics, and ML-Agents' scores of
collected transitions (``collector.report_collected``)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.data.collate import make_batch
from ding_lite.model.recurrent import Memory, row_mean
from ding_lite.reward_model.signals import RewardSignals


def learn_stats(critic_loss: Tensor, td: Tensor, q: Tensor, target_q: Tensor,
                obs: Memory | None = None) -> dict[str, Tensor]:
    """The critics' scalars of one seed (means over a sequence batch's loss steps), and ``priority``: |TD| per
    sample ``[B]``."""
    mean = (lambda x: x.mean()) if obs is None else (lambda x: row_mean(x, obs).mean())  # noqa: E731
    q_mean = row_mean(q.detach(), obs)                         # [E]: one value per critic
    twin = {'twin_critic_loss': mean(td[1].pow(2))} if len(td) > 1 else {}  # DI-engine's name: the 2nd critic's
    return {'critic_loss': critic_loss, **twin, 'q_value': q_mean.mean(),
            **{f'q_value_{i + 1}': v for i, v in enumerate(q_mean.unbind())}, 'target_q_value': mean(target_q),
            'td_error': mean(td.abs()), 'priority': td.abs().mean(0)}


@torch.no_grad()
def transition_scores(columns: dict[str, np.ndarray], q_pred: Callable[[Batch], Tensor], heads: Any,
                      normalize_obs: Callable[[Tensor], Tensor], device: torch.device) -> dict[str, np.ndarray]:
    """Per row of ``columns``: ``value_estimate``, the critics' value (``q_pred``) of the action taken (their min;
    heads and quantiles averaged), and with reward signals each signal's reward (``<signal>``, its strength
    applied)."""
    tensors = {key: torch.as_tensor(columns[key], device=device)
               for key in ('obs', 'action', 'next_obs', 'reward', 'done')}
    tensors['obs'], tensors['next_obs'] = normalize_obs(tensors['obs']), normalize_obs(tensors['next_obs'])
    batch = make_batch(tensors)
    q = q_pred(batch)                                          # [E, B(, heads or quantiles)]
    while q.dim() > 2:
        q = q.mean(-1)
    reports = {'value_estimate': q.min(0).values}
    if isinstance(heads, RewardSignals):
        rewards = heads.rewards(batch)                         # [B, K]
        reports |= {name: rewards[:, k] for k, name in enumerate(heads.names) if name != 'extrinsic'}
    return {name: value.float().cpu().numpy() for name, value in reports.items()}
