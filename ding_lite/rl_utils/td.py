"""One-step temporal-difference errors (DI-engine's names and return form)."""
from __future__ import annotations

from collections import namedtuple

import torch
from torch import Tensor, nn

v_1step_td_data = namedtuple('v_1step_td_data', ['v', 'next_v', 'reward', 'done', 'weight'])
q_v_1step_td_data = namedtuple('q_v_1step_td_data', ['q', 'v', 'act', 'reward', 'done', 'weight'])

_MSE = nn.MSELoss(reduction='none')


def _target(reward: Tensor, next_v: Tensor, done: Tensor | None, gamma: float) -> Tensor:
    """``r + gamma * (1 - done) * next_v``: a terminated transition does not bootstrap."""
    not_done = 1.0 if done is None else 1.0 - done.to(next_v.dtype)
    return (reward + gamma * not_done * next_v).detach()


def _weighted(per_sample: Tensor, weight: Tensor | None) -> Tensor:
    return per_sample.mean() if weight is None else (per_sample * weight).mean()


def v_1step_td_error(data: v_1step_td_data, gamma: float, criterion: nn.Module = _MSE) -> tuple[Tensor, Tensor]:
    """State-value TD error. Returns ``(weighted mean loss, per-sample error [B])``."""
    v, next_v, reward, done, weight = data
    per_sample = criterion(v, _target(reward, next_v, done, gamma))
    return _weighted(per_sample, weight), per_sample


def q_v_1step_td_error(data: q_v_1step_td_data, gamma: float, criterion: nn.Module = _MSE) -> tuple[Tensor, Tensor]:
    """TD error of ``q[B, A]`` at the taken ``act[B]`` against ``reward + gamma * v``; same returns as above."""
    q, v, act, reward, done, weight = data
    q_s_a = q.gather(-1, act.long().unsqueeze(-1)).squeeze(-1)
    per_sample = criterion(q_s_a, _target(reward, v, done, gamma))
    return _weighted(per_sample, weight), per_sample


class TDTarget(nn.Module):
    """The one-step soft TD target ``r + gamma (1 - done) v`` (TorchRL's TD(0) value estimator), owning gamma: a
    scalar, or one per reward head ``[K]`` with ``use_done [K]`` (0 where a head bootstraps through episode ends).
    gamma is a buffer, so a run of stacked rows (``SeedAxis``) stacks each row's own as it stacks the weights."""

    def __init__(self, gamma: float | Tensor, use_done: Tensor | None = None,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        self.register_buffer('gamma', torch.as_tensor(gamma, dtype=torch.get_default_dtype(), device=device))
        self.register_buffer('use_done', torch.ones((), device=device) if use_done is None else use_done)

    def forward(self, reward: Tensor, done: Tensor, v: Tensor) -> Tensor:
        """``reward``, ``done`` ``[B]`` (or ``reward [B, K]`` per head); ``v`` ``[B]`` or ``[B, K]`` (heads or atoms)."""
        extra = v.dim() - done.dim()  # the heads' or atoms' axis, which reward and done broadcast over
        reward = reward.view(*reward.shape, *[1] * (v.dim() - reward.dim()))
        done = done.view(*done.shape, *[1] * extra)
        return reward + self.gamma * (1 - done * self.use_done) * v


__all__ = ['v_1step_td_data', 'v_1step_td_error', 'q_v_1step_td_data', 'q_v_1step_td_error', 'TDTarget']
