"""Truncated Quantile Critics on SAC's hooks."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from easydict import EasyDict
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import tanh_gaussian_sample
from ding_lite.utils.default_config import ConfigError
from .sac import SACPolicy


@POLICY_REGISTRY.register('tqc')
class TQCPolicy(SACPolicy):
    """TQC (arXiv:2005.04269): ``n_critics`` critics of ``n_quantiles`` quantiles each; the target pools every
    critic's atoms, sorts them and drops the top ``top_quantiles_to_drop`` per critic. As tqc_pytorch and
    SB3-contrib: the quantile Huber loss is the mean over critics, quantiles and target atoms (TorchRL sums over
    critics), and the actor maximises the mean of all atoms, untruncated.
    """
    capabilities = frozenset({'cloning'})  # its update is not written for sequences or reward heads

    config = dict(
        type='tqc',                          # the registered policy name
        model=dict(
            n_critics=2,                     # N distributional critics (SB3-contrib's default; the paper's 5)
            n_quantiles=25,                  # M quantiles per critic (the paper's and SB3-contrib's)
        ),
        learn=dict(
            top_quantiles_to_drop=2,         # d: atoms dropped per critic from the pooled target (0 on HalfCheetah)
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        drop, quantiles = cfg.learn.top_quantiles_to_drop, cfg.model.n_quantiles
        if not (isinstance(quantiles, int) and quantiles > 1 and isinstance(drop, int) and 0 <= drop < quantiles):
            raise ConfigError(f"tqc needs policy.model.n_quantiles > 1 and 0 <= policy.learn.top_quantiles_to_drop "
                              f"< n_quantiles, got n_quantiles={quantiles!r}, top_quantiles_to_drop={drop!r}")

    def _init_learn(self) -> None:
        super()._init_learn()
        quantiles = self._model.n_quantiles
        self._tau = (torch.arange(quantiles, device=self._device) + 0.5) / quantiles     # quantile midpoints [M]
        self._keep = self._n_critics * (quantiles - self._cfg.learn.top_quantiles_to_drop)

    def _soft_target_v(self, next_obs: Tensor) -> Tensor:
        action, log_prob = tanh_gaussian_sample(*self._actor(next_obs))
        atoms = self._critic(next_obs, action, target=True)                             # [E, B, M]
        pooled = atoms.transpose(0, 1).reshape(atoms.shape[1], -1).sort(-1).values     # [B, E * M]
        return pooled[:, :self._keep] - self._alpha.value * log_prob.unsqueeze(-1)      # [B, K]

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        target = self._td_target(batch)                                                 # [B, K]
        quantiles = self._q_pred(batch)                                                 # [E, B, M]
        loss = quantile_huber(quantiles, target, self._tau).mean((0, 2, 3))             # [B]
        q, target_q = quantiles.mean(-1), target.mean(-1)
        return (batch.weight * loss).mean(), q.detach() - target_q, q, target_q

    def _actor_q(self, obs: Tensor, action: Tensor) -> Tensor:
        return self._critic(obs, action).mean((0, -1))                                  # every atom, untruncated


def quantile_huber(quantiles: Tensor, target: Tensor, tau: Tensor, kappa: float = 1.0) -> Tensor:
    """``|tau - 1{u < 0}| * huber_kappa(u)`` with ``u = target - quantile``, for every critic, quantile and
    target atom: ``[E, B, M, K]`` from quantiles ``[E, B, M]``, target atoms ``[B, K]`` and ``tau [M]``."""
    u = target[None, :, None, :] - quantiles.unsqueeze(-1)
    huber = F.huber_loss(u, u.new_zeros(()).expand_as(u), reduction='none', delta=kappa)  # one fused kernel each way
    return torch.where(u.detach() < 0, 1 - tau[:, None], tau[:, None]) * huber
