"""Critics with a value per reward: ALF's multi-dimensional rewards (``policy.reward_weights``) and, on the same
machinery, ML-Agents' reward signals. Each head has its own reward column, gamma and weight; the actor maximises
``weights · Q``."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor

from ..utils.default_config import ConfigError


def check_weights(weights: Any, size: int | None = None, what: str = 'policy.reward_weights') -> list[float]:
    """``weights`` as a list of floats: a non-empty list of numbers, not all zero (of ``size``, where given)."""
    ok = isinstance(weights, (list, tuple)) and len(weights) > 0 and \
        all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights)
    if not ok or not any(weights) or (size is not None and len(weights) != size):
        wanted = f"{size} numbers" if size is not None else 'a list of numbers, one per reward dimension'
        raise ConfigError(f"{what}={weights!r}: expected {wanted}, not all zero")
    return [float(w) for w in weights]


class SingleReward:
    """The critics' one reward, the env's (the default strategy): each method is what the update does without
    reward heads, so the update calls the strategy it has and never asks which one."""

    names: list[str] = []
    trains = False  # whether ``train_step`` learns from the batch (reward models)

    def critic_output(self, q: Tensor) -> Tensor:
        """The critics' output ``[E, B(, ...)]`` as the update reads it."""
        return q

    def reduce(self, q: Tensor) -> Tensor:
        """The critics' ``[E, ...]`` reduced over the replicas: clipped double Q, their min."""
        return q.min(0).values

    def combine(self, values: Tensor) -> Tensor:
        """The one value to maximise."""
        return values

    def soft_value(self, q: Tensor, bonus: Tensor) -> Tensor:
        """The soft value ``reduce(q) - bonus`` (``bonus``: alpha log pi, broadcast over a value's atoms)."""
        v = self.reduce(q)
        return v - bonus.view(*bonus.shape, *[1] * (v.dim() - bonus.dim()))

    def expectation(self, pi: Tensor, values: Tensor) -> Tensor:
        """``sum_a pi(a) values(a)`` over the actions' axis (discrete SAC)."""
        return (pi * values).sum(-1)

    def loss_mean(self, squared: Tensor, target: Tensor) -> Tensor:
        return squared

    def summary(self, td: Tensor, q: Tensor, target_q: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(td, q, target_q)`` as the learn statistics report them."""
        return td, q, target_q

    def head_stats(self, reward: Tensor, q: Tensor) -> dict[str, Tensor]:
        """Each head's reward and value to log."""
        return {}

    def rewards(self, batch: Any) -> Tensor:
        return batch.reward

    def train_step(self, batch: Any) -> dict[str, Tensor]:
        return {}

    def stat_names(self) -> list[str]:
        return []

    def learn_state(self) -> dict[str, Any]:
        return {}

    def load_learn_state(self, state: dict[str, Any]) -> None:
        pass


class RewardHeads(SingleReward):
    """What the critics' heads share: ``names``, ``gamma``, ``use_done`` and ``weights`` ``[K]`` on the learner's
    device. ``weights`` changes in place only, so a captured CUDA graph reads the new values."""

    stat_prefix = 'reward_dim'  # the learner's logs: <prefix>/<name>/reward|value

    def __init__(self, names: Sequence[str], gamma: Sequence[float], use_done: Sequence[float],
                 weights: Sequence[float], device: torch.device) -> None:
        as_tensor = lambda values: torch.tensor(values, dtype=torch.get_default_dtype(), device=device)  # noqa: E731
        self.names = list(names)
        self.gamma, self.use_done, self.weights = as_tensor(gamma), as_tensor(use_done), as_tensor(weights)
        self.mirror: np.ndarray | None = None  # a host copy kept equal to weights (what returns are weighed by)

    def critic_output(self, q: Tensor) -> Tensor:
        """``[E, B, ..., K]``: a model with one head keeps its axis."""
        return q.unsqueeze(-1) if len(self.names) == 1 else q

    def reduce(self, q: Tensor) -> Tensor:
        """The critics' ``[E, ..., K]`` reduced over the replicas: each head's min, its max where the weight is
        negative (pessimistic for a cost as for a reward)."""
        return torch.where(self.weights >= 0, q.min(0).values, q.max(0).values)

    def combine(self, values: Tensor) -> Tensor:
        """``weights · values`` over the last axis."""
        return (values * self.weights).sum(-1)

    def loss_mean(self, squared: Tensor, target: Tensor) -> Tensor:
        """The heads' squared errors ``[..., K]`` averaged over the heads (their targets ``[B, K]``)."""
        return squared.mean(-1)

    def entropy_share(self) -> Tensor:
        """``[K]``: the share of the entropy bonus each head's soft value carries, ``w / |w|^2``, so that
        ``combine`` adds it once (ML-Agents' signals, at weights 1/K each, carry it whole)."""
        return self.weights / self.weights.square().sum()

    def soft_value(self, q: Tensor, bonus: Tensor) -> Tensor:
        """Each head's soft value ``[..., K]``, with its share of the entropy bonus."""
        return self.reduce(q) - bonus.unsqueeze(-1) * self.entropy_share()

    def expectation(self, pi: Tensor, values: Tensor) -> Tensor:
        return (pi.unsqueeze(-1) * values).sum(-2)

    def summary(self, td: Tensor, q: Tensor, target_q: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The heads' mean |TD| and their weighted values."""
        return td.abs().mean(-1), self.combine(q), self.combine(target_q)

    def head_stats(self, reward: Tensor, q: Tensor) -> dict[str, Tensor]:
        """``<prefix>/<name>/reward|value`` per head (``q [E, B, K]``)."""
        return {f'{self.stat_prefix}/{name}/{key}': value[..., k].mean() for k, name in enumerate(self.names)
                for key, value in (('reward', reward), ('value', q))}

    def stat_names(self) -> list[str]:
        return [f'{self.stat_prefix}/{name}/{key}' for name in self.names for key in ('reward', 'value')]

    def learn_state(self) -> dict[str, Any]:
        return {'reward_weights': self.weights.detach().clone()}

    def load_learn_state(self, state: dict[str, Any]) -> None:
        if 'reward_weights' in state:
            self._set(torch.as_tensor(state['reward_weights']))

    def set_weights(self, weights: Sequence[float]) -> None:
        self._set(torch.as_tensor(check_weights(list(weights), len(self.names), 'reward weights')))

    def _set(self, weights: Tensor) -> None:
        """In place (a captured CUDA graph reads them), and into ``mirror`` (a load or a user's call: no learn step)."""
        self.weights.copy_(weights)
        if self.mirror is not None:
            self.mirror[:] = weights.double().cpu().numpy()


class RewardVector(RewardHeads):
    """ALF's multi-dimensional reward: the env's reward ``[D]`` per step, a gamma per dimension (one
    ``discount_factor`` for all, or a list), every dimension ending with the episode.

    Each head's squared error weighs ``|w|`` in the critics' loss (normalised to a mean): where the gradients balance,
    the heads' errors count alike in ``weights · Q`` (a dimension weighted 1000, whose values are that much smaller,
    is fitted that much more closely); equal weights give the plain mean. Measured on the split Pendulum with weights
    [1, 1, 1000] it learned better than the plain mean and than ``w^2`` (BENCHMARKS.md, issue 40)."""

    def __init__(self, weights: Sequence[float], gamma: float | Sequence[float], device: torch.device) -> None:
        size = len(weights)
        gammas = list(gamma) if isinstance(gamma, (list, tuple)) else [float(gamma)] * size
        super().__init__([str(d) for d in range(size)], gammas, [1.0] * size, weights, device)

    def loss_mean(self, squared: Tensor, target: Tensor) -> Tensor:
        share = self.weights.abs()
        return (squared * share).sum(-1) / share.sum()


__all__ = ['SingleReward', 'RewardHeads', 'RewardVector', 'check_weights']
