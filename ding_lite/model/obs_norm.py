"""Observation and reward normalisation by running statistics (SB3's ``VecNormalize``, DI-engine's ``norm_obs`` and
``norm_reward``)."""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from ..utils.device import to_device


class RunningObsNorm(nn.Module):
    """``clip((obs - mean) / sqrt(var + eps))`` with the mean and variance of every observation passed to ``update``.

    The statistics are buffers, so they travel with the model that holds this module: checkpoints, the weights the
    Ray actors receive, ``load_policy`` and exported actors. Nothing changes them but ``update`` (collected data).
    """

    def __init__(self, shape: int | list[int], clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.clip, self.eps = float(clip), eps
        # float64 sums (Chan et al.'s parallel update, as SB3), float32 copies for the forward
        self.register_buffer('count', torch.zeros((), dtype=torch.float64))
        self.register_buffer('mean', torch.zeros(shape, dtype=torch.float64))
        self.register_buffer('var', torch.ones(shape, dtype=torch.float64))
        self.register_buffer('shift', torch.zeros(shape))
        self.register_buffer('scale', torch.ones(shape))

    @torch.no_grad()
    def update(self, obs: Tensor) -> None:
        """Fold a batch ``[N, *shape]`` of observations into the statistics."""
        obs = to_device(obs, self.mean.device, torch.float64).reshape(-1, *self.mean.shape)
        n = obs.shape[0]
        if n == 0:
            return
        batch_mean, batch_var = obs.mean(0), obs.var(0, unbiased=False)
        total = self.count + n
        delta = batch_mean - self.mean
        self.var.copy_((self.var * self.count + batch_var * n + delta.pow(2) * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)
        self.shift.copy_(self.mean)
        self.scale.copy_((self.var + self.eps).rsqrt())

    def forward(self, obs: Tensor) -> Tensor:
        return ((obs.to(self.scale.dtype) - self.shift) * self.scale).clamp(-self.clip, self.clip)

    def extra_repr(self) -> str:
        return f"shape={tuple(self.mean.shape)}, clip={self.clip}"


class RunningRewardNorm(RunningObsNorm):
    """SB3's reward rule: ``clip(reward / sqrt(var(R) + eps))``, where ``R`` is each env's running discounted return
    (``R = gamma R + r``, zero at an episode's start) and ``update`` is given those returns; no shift by the mean."""

    def __init__(self, clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__(1, clip, eps)

    def forward(self, reward: Tensor) -> Tensor:
        return (reward.to(self.scale.dtype) * self.scale[0]).clamp(-self.clip, self.clip)

    def fit(self, reward: Tensor, done: Tensor, gamma: float, episode_start: Tensor | None = None) -> None:
        """Fold in the running returns of transitions stored in order (offline data): ``R = gamma R + r``, from 0
        after a terminal step and at an episode's start, where the data marks it."""
        reward, done = reward.double().cpu().numpy().reshape(-1), done.bool().cpu().numpy().reshape(-1)
        start = episode_start.bool().cpu().numpy().reshape(-1) if episode_start is not None else None
        returns, running = np.empty_like(reward), 0.0
        for t in range(len(reward)):
            running = (0.0 if start is not None and start[t] else running) * gamma + reward[t]
            returns[t] = running
            running = 0.0 if done[t] else running
        self.update(torch.from_numpy(returns))
