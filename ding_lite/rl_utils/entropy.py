"""Entropy pieces of SAC: the temperature alpha and the tanh-squashed Gaussian."""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .optim import load_optimizer, make_adam

_LOG2 = math.log(2.0)


def tanh_gaussian_sample(mu: Tensor, sigma: Tensor, noise: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Reparameterised ``a = tanh(mu + sigma * eps)`` and ``log pi(a) [B]`` with the tanh Jacobian (SAC, App. C);
    ``noise`` (eps) drawn here unless given."""
    noise = torch.randn_like(mu) if noise is None else noise
    u = mu + sigma * noise
    # log N(u; mu, sigma) with (u - mu) / sigma = noise, minus log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u))
    log_prob = -0.5 * noise.pow(2) - sigma.log() - 0.5 * math.log(2 * math.pi)
    log_prob = log_prob - 2.0 * (_LOG2 - u - F.softplus(-2.0 * u))
    return torch.tanh(u), log_prob.sum(-1)


class LearnedScalar(nn.Module):
    """A scalar parameter ``raw`` with an Adam of its own (none where it stays fixed); a checkpoint copies both."""

    def __init__(self, raw: float, lr: float, learned: bool = True) -> None:
        super().__init__()
        self.learned = learned
        self.raw = nn.Parameter(torch.tensor(float(raw)), requires_grad=learned)
        self.optimizer = make_adam([self.raw], lr) if learned else None

    def state_dict(self, *args, **kwargs) -> dict:  # type: ignore[override]
        state = {'raw': self.raw.detach().clone()}
        if self.optimizer is not None:
            state['optimizer'] = copy.deepcopy(self.optimizer.state_dict())  # not shared with a loader
        return state

    def load_state_dict(self, state: dict, strict: bool = True) -> None:  # type: ignore[override]
        with torch.no_grad():
            self.raw.copy_(state['raw'])
        if self.optimizer is not None and 'optimizer' in state:
            load_optimizer(self.optimizer, state['optimizer'])


class Temperature(LearnedScalar):
    """Entropy temperature alpha: fixed, or learned in log or linear space."""

    def __init__(self, init: float, target_entropy: float | None, lr: float, log_space: bool = True) -> None:
        if init <= 0:
            raise ValueError(f"alpha must be positive, got {init}")
        super().__init__(math.log(init) if log_space else init, lr, learned=target_entropy is not None)
        self.target_entropy, self.log_space = target_entropy, log_space  # target None: alpha stays fixed

    @property
    def value(self) -> Tensor:
        return (self.raw.exp() if self.log_space else self.raw).detach()

    def update(self, entropy: Tensor) -> Tensor:
        """One step on ``raw * (entropy - target)``: alpha falls while entropy exceeds the target. ``entropy``
        is ``[B]``, or ``[S, B]`` for a temperature per seed (``raw`` of shape ``[S]``)."""
        gap = (entropy.detach() - self.target_entropy).mean(-1)
        loss = self.raw.detach() * gap
        self.raw.grad = gap.reshape(self.raw.shape)  # d loss / d raw, set directly: no autograd pass for a scalar
        self.optimizer.step()
        if not self.log_space:
            self.raw.data.clamp_(min=1e-8)  # linear space: alpha must stay positive
        return loss.detach()
