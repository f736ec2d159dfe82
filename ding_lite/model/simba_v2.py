"""SimbaV2 (Lee et al., ICML 2025, arXiv:2502.15280): features and weights kept on the unit hypersphere, learnable
scalers, LERP residual blocks, a tanh-Gaussian actor and categorical critics over a fixed support of returns."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..registry import MODEL_REGISTRY
from .obs_norm import RunningObsNorm, RunningRewardNorm
from .qac import check_action_space, _flat_size, _QAC

EPS = 1e-8


def l2_normalize(x: Tensor) -> Tensor:
    """``x`` projected onto the unit sphere along its last axis."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(EPS)


class HyperLinear(nn.Module):
    """A Linear without bias whose weight vectors (one per output) are projected back onto the unit sphere after
    every optimizer step (``project``); ``ensemble_size``: that many members batched, ``[E, B, in] -> [E, B, out]``.
    Orthogonal initialisation, then projected."""

    def __init__(self, in_features: int, out_features: int, ensemble_size: int | None = None) -> None:
        super().__init__()
        shape = (out_features, in_features) if ensemble_size is None else (ensemble_size, out_features, in_features)
        self.weight = nn.Parameter(torch.empty(shape))
        for member in self.weight.view(-1, out_features, in_features):
            nn.init.orthogonal_(member)
        self.project()

    @torch.no_grad()
    def project(self) -> None:
        self.weight.copy_(l2_normalize(self.weight))

    def forward(self, x: Tensor) -> Tensor:
        if self.weight.dim() == 2:
            return F.linear(x, self.weight)
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.weight.shape[0], -1, -1)
        return torch.bmm(x, self.weight.transpose(1, 2))


class Scaler(nn.Module):
    """A learnable scaling vector ``s`` stored at ``scale`` and read as ``s * init / scale`` (so it starts at
    ``init`` while Adam's steps move it at the stored scale): ``x * s * init / scale``."""

    def __init__(self, dim: int, init: float, scale: float, ensemble_size: int | None = None) -> None:
        super().__init__()
        shape = (dim,) if ensemble_size is None else (ensemble_size, 1, dim)
        self.scaler = nn.Parameter(torch.full(shape, float(scale)))
        self.forward_scale = init / scale

    def forward(self, x: Tensor) -> Tensor:
        return x * self.scaler * self.forward_scale


class HyperEmbedder(nn.Module):
    """The input onto the sphere: ``[x; c_shift]`` normalised, a ``HyperLinear`` into the width, a scaler, normalised."""

    def __init__(self, in_size: int, width: int, c_shift: float, ensemble_size: int | None = None) -> None:
        super().__init__()
        self.c_shift = c_shift
        self.linear = HyperLinear(in_size + 1, width, ensemble_size)
        self.scaler = Scaler(width, math.sqrt(2 / width), math.sqrt(2 / width), ensemble_size)

    def forward(self, x: Tensor) -> Tensor:
        x = l2_normalize(torch.cat([x, torch.full_like(x[..., :1], self.c_shift)], dim=-1))
        return l2_normalize(self.scaler(self.linear(x)))


class HyperLERPBlock(nn.Module):
    """``normalize(x + alpha * (mlp(x) - x))``: ``mlp`` a ``HyperLinear`` widening four times, a scaler, ReLU, a
    ``HyperLinear`` back and a projection; ``alpha`` a learnable scaler starting at ``1 / (blocks + 1)``."""

    def __init__(self, width: int, blocks: int, ensemble_size: int | None = None) -> None:
        super().__init__()
        self.up = HyperLinear(width, 4 * width, ensemble_size)
        self.up_scaler = Scaler(4 * width, math.sqrt(2 / width), math.sqrt(2 / width), ensemble_size)
        self.down = HyperLinear(4 * width, width, ensemble_size)
        self.alpha = Scaler(width, 1 / (blocks + 1), 1 / math.sqrt(width), ensemble_size)

    def forward(self, x: Tensor) -> Tensor:
        hidden = l2_normalize(self.down(F.relu(self.up_scaler(self.up(x))) + EPS))
        return l2_normalize(x + self.alpha(hidden - x))


class HyperHead(nn.Module):
    """``HyperLinear`` -> scaler -> ``HyperLinear`` into ``out`` outputs, plus a bias (the paper's output layers)."""

    def __init__(self, width: int, out: int, ensemble_size: int | None = None) -> None:
        super().__init__()
        self.hidden = HyperLinear(width, width, ensemble_size)
        self.scaler = Scaler(width, math.sqrt(2 / width), math.sqrt(2 / width), ensemble_size)
        self.out = HyperLinear(width, out, ensemble_size)
        self.bias = nn.Parameter(torch.zeros(out if ensemble_size is None else (ensemble_size, 1, out)))

    def forward(self, x: Tensor) -> Tensor:
        return self.out(self.scaler(self.hidden(x))) + self.bias


def hyper_trunk(in_size: int, width: int, blocks: int, c_shift: float, ensemble_size: int | None = None
                ) -> nn.Sequential:
    return nn.Sequential(HyperEmbedder(in_size, width, c_shift, ensemble_size),
                         *[HyperLERPBlock(width, blocks, ensemble_size) for _ in range(blocks)])


class HyperGaussian(nn.Module):
    """The actor's head: a mean and a log standard deviation, bounded by a tanh into ``[log_std_min, log_std_max]``."""

    def __init__(self, width: int, action_size: int, log_std_min: float, log_std_max: float) -> None:
        super().__init__()
        self.mu, self.log_std = HyperHead(width, action_size), HyperHead(width, action_size)
        self.log_std_min, self.log_std_max = log_std_min, log_std_max

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        squashed = torch.tanh(self.log_std(x))
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (squashed + 1)
        return self.mu(x), log_std.exp()


@MODEL_REGISTRY.register('simba_v2_qac')
class SimbaV2QAC(_QAC):
    """SimbaV2's actor and categorical critics (the paper's sizes: actor 1 block of 128, critics 2 blocks of 512,
    101 bins on ``[-g_max, g_max]``).

    ``compute_actor`` returns ``{'logit': [mu, sigma]}``; ``compute_critic`` ``{'q_value' [E, B] (each critic's
    expected value), 'logit' [E, B, num_bins]}``. The model owns its running observation normaliser (``obs_norm``)
    and reward scaler (``reward_norm``: rewards over the running discounted return's standard deviation), saved and
    resumed with it; ``project()`` puts every weight back on the sphere (the policy calls it after each step)."""

    action_space_type = 'continuous'  # the actions it acts on (a policy of other actions refuses it)

    def __init__(
            self,
            obs_shape: int | list,                # observation size (vectors)
            action_shape: int | list,             # action size
            twin_critic: bool = True,             # two critics
            action_space: str = 'reparameterization',  # DI-engine's key; the only one: a tanh-squashed Gaussian
            n_critics: int | None = None,         # critics in the ensemble; None: 2 with twin_critic, else 1
            actor_num_blocks: int = 1,            # the actor's LERP blocks (the paper's 1)
            actor_hidden_dim: int = 128,          # the actor's width (the paper's 128)
            critic_num_blocks: int = 2,           # each critic's LERP blocks (the paper's 2)
            critic_hidden_dim: int = 512,         # each critic's width (the paper's 512)
            num_bins: int = 101,                  # the categorical critic's bins (the paper's 101)
            g_max: float = 5.0,                   # its support: [-g_max, g_max], returns in scaled rewards' units
            c_shift: float = 3.0,                 # the constant appended to the input before its projection
            obs_norm: bool = True,                # observations normalised by running statistics (RSNorm)
            reward_norm: bool = True,             # rewards scaled by the running discounted return's std
            log_std_min: float = -10.0,           # the actor's log standard deviation's lower bound (the paper's)
            log_std_max: float = 2.0,             # and its upper bound (the paper's)
    ) -> None:
        super().__init__()
        check_action_space(action_space, 'simba_v2_qac')
        obs_size, self.action_size = _flat_size(obs_shape, 'obs_shape'), _flat_size(action_shape, 'action_shape')
        if num_bins < 2 or g_max <= 0:
            raise ValueError(f"model 'simba_v2_qac': num_bins >= 2 and g_max > 0, got {num_bins} and {g_max}")
        self.twin_critic, self.share_encoder, self.memory = twin_critic, False, None
        self.n_critics, self.n_quantiles, self.reward_heads = n_critics or (2 if twin_critic else 1), 1, 1
        if obs_norm:
            self.obs_norm = RunningObsNorm(obs_size, float('inf'))
        if reward_norm:
            self.reward_norm = RunningRewardNorm(float('inf'))
        self.register_buffer('support', torch.linspace(-g_max, g_max, num_bins))
        self.actor = nn.Sequential(hyper_trunk(obs_size, actor_hidden_dim, actor_num_blocks, c_shift),
                                   HyperGaussian(actor_hidden_dim, self.action_size, log_std_min, log_std_max))
        self.critic = nn.Sequential(
            hyper_trunk(obs_size + self.action_size, critic_hidden_dim, critic_num_blocks, c_shift, self.n_critics),
            HyperHead(critic_hidden_dim, num_bins, self.n_critics))

    def compute_actor(self, obs: Tensor) -> dict[str, list[Tensor]]:
        mu, sigma = self.actor(obs)
        return {'logit': [mu, sigma]}

    def compute_critic(self, inputs: dict[str, Tensor]) -> dict[str, Tensor]:
        action = inputs['action'] if inputs['action'].dim() > 1 else inputs['action'].unsqueeze(-1)
        logit = self.critic(torch.cat([inputs['obs'], action], dim=-1))          # [E, B, bins]
        q = (logit.softmax(-1) * self.support).sum(-1)
        return {'q_value': self._q_out(q), 'logit': logit}

    @torch.no_grad()
    def project(self, part: nn.Module | None = None) -> None:
        """Every ``HyperLinear`` weight of ``part`` (the whole model by default) back onto the unit sphere."""
        for module in (part or self).modules():
            if isinstance(module, HyperLinear):
                module.project()


__all__ = ['HyperLinear', 'Scaler', 'HyperLERPBlock', 'SimbaV2QAC', 'l2_normalize']
