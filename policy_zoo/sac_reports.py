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
from ding_lite.rl_utils import tanh_gaussian_sample


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


def di_engine_extras(averaged: dict[str, float], optimizer_q: torch.optim.Optimizer,
                     optimizer_policy: torch.optim.Optimizer) -> dict[str, float]:
    """DI-engine's names for what its SAC logs beside the ``averaged`` statistics: the optimizers' learning rates
    and the losses' sum (``critic_loss`` here is already both critics' sum, DI-engine's ``critic_loss +
    twin_critic_loss``)."""
    losses = [averaged[key] for key in ('critic_loss', 'policy_loss', 'alpha_loss') if key in averaged]
    return {'cur_lr_q': optimizer_q.param_groups[0]['lr'], 'cur_lr_p': optimizer_policy.param_groups[0]['lr'],
            'total_loss': float(sum(losses))}


def gaussian_entropy(logit: Any) -> Tensor:
    """``-log pi(a)`` of fresh tanh-Gaussian draws from a collect forward's ``logit`` (``[mu, sigma]``, ``[B, 2, A]``
    or DI-engine's ``{'mu', 'sigma'}``), by a private generator: the run's random streams stay."""
    mu, sigma = (logit['mu'], logit['sigma']) if isinstance(logit, dict) else \
        logit if isinstance(logit, (list, tuple)) else logit.unbind(1)
    generator = torch.Generator(mu.device).manual_seed(0)
    noise = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
    return -tanh_gaussian_sample(mu, sigma, noise)[1]
