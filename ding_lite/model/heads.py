"""Building blocks: MLP trunks, a batched critic ensemble and the Gaussian head."""
from __future__ import annotations

import inspect
import math

import torch
from easydict import EasyDict
from torch import Tensor, nn

ACTIVATIONS = {'relu': nn.ReLU, 'tanh': nn.Tanh, 'elu': nn.ELU, 'gelu': nn.GELU, 'silu': nn.SiLU,
               'leaky_relu': nn.LeakyReLU}


def get_activation(activation: str | nn.Module) -> nn.Module:
    if isinstance(activation, nn.Module):
        return activation
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; expected one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[activation]()


def signature_config(cls: type) -> EasyDict:
    """A model's default config: its constructor's keyword defaults (required arguments map to None)."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return EasyDict({p.name: None if p.default is inspect.Parameter.empty else p.default
                     for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)})


def mlp(in_size: int, hidden_size: int, layer_num: int, activation: str | nn.Module) -> nn.Sequential:
    """``Linear(in, hidden)`` + activation, then ``layer_num`` more hidden layers (DI-engine's encoder + head trunk)."""
    layers: list[nn.Module] = [nn.Linear(in_size, hidden_size), get_activation(activation)]
    for _ in range(layer_num):
        layers += [nn.Linear(hidden_size, hidden_size), get_activation(activation)]
    return nn.Sequential(*layers)


class EnsembleLinear(nn.Module):
    """``E`` independent linear layers applied in one batched matmul: ``[B|E, B, in] -> [E, B, out]``."""

    def __init__(self, ensemble_size: int, in_features: int, out_features: int) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)  # nn.Linear's default init, per member
        self.weight = nn.Parameter(torch.empty(ensemble_size, in_features, out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(ensemble_size, 1, out_features).uniform_(-bound, bound))

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 2:  # shared input: broadcast without copying
            x = x.unsqueeze(0).expand(self.weight.shape[0], -1, -1)
        return torch.baddbmm(self.bias, x, self.weight)


def ensemble_mlp(ensemble_size: int, in_size: int, hidden_size: int, layer_num: int, out_size: int,
                 activation: str | nn.Module) -> nn.Sequential:
    """``ensemble_size`` MLPs of identical shape evaluated together; output ``[E, B, out]``."""
    layers: list[nn.Module] = [EnsembleLinear(ensemble_size, in_size, hidden_size), get_activation(activation)]
    for _ in range(layer_num):
        layers += [EnsembleLinear(ensemble_size, hidden_size, hidden_size), get_activation(activation)]
    layers.append(EnsembleLinear(ensemble_size, hidden_size, out_size))
    return nn.Sequential(*layers)


class ReparameterizationHead(nn.Module):
    """State-conditioned Gaussian: returns ``(mu, sigma)`` with log-sigma clamped to ``[log_sigma_min, max]``."""

    def __init__(self, hidden_size: int, output_size: int, log_sigma_min: float = -20.0,
                 log_sigma_max: float = 2.0) -> None:
        super().__init__()
        self.mu = nn.Linear(hidden_size, output_size)
        self.log_sigma = nn.Linear(hidden_size, output_size)
        self.log_sigma_min, self.log_sigma_max = log_sigma_min, log_sigma_max

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        log_sigma = self.log_sigma(x).clamp(self.log_sigma_min, self.log_sigma_max)
        return self.mu(x), log_sigma.exp()
