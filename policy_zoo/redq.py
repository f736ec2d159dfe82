"""REDQ and DroQ on SAC's hooks: many critics updated per actor step."""
from __future__ import annotations

import torch
from easydict import EasyDict
from torch import Tensor

from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import tanh_gaussian_sample
from ding_lite.utils.default_config import ConfigError
from .sac import SACPolicy


@POLICY_REGISTRY.register('redq')
class REDQPolicy(SACPolicy):
    """REDQ (arXiv:2101.05982): an ensemble of N critics, each with its own target (one stacked ensemble and one
    stacked target); the target takes the min over a fresh random subset of M members, drawn without replacement
    on the learner's device at every update; the actor maximises the mean of all N and steps once per G critic
    steps (``policy_delay``), as the reference code does with G updates per env step (``update_per_collect`` = G x
    ``collect.n_sample``).
    """
    capabilities = frozenset({'cloning'})  # its update is not written for sequences or reward heads

    config = dict(
        type='redq',                         # the registered policy name
        model=dict(
            n_critics=10,                    # N: the critic ensemble (REDQ's ensemble_size)
        ),
        learn=dict(
            subset_size=2,                   # M: members whose min makes each update's target
            policy_delay=20,                 # G: critic steps per actor (and alpha) step; the papers' MuJoCo UTD
            update_per_collect=20,           # learn steps per collect: G per env step with collect.n_sample=1
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        n, m = cfg.model.get('n_critics'), cfg.learn.subset_size
        if not (isinstance(n, int) and isinstance(m, int) and 1 <= m <= n):
            raise ConfigError(f"{cfg.type} needs 1 <= policy.learn.subset_size <= policy.model.n_critics, got "
                              f"subset_size={m!r}, n_critics={n!r}")

    def _subset(self) -> Tensor:
        """M member indices, without replacement: a fresh draw on the learner's device (no host sync)."""
        return torch.rand(self._n_critics, device=self._device).argsort()[:self._cfg.learn.subset_size]

    def _soft_target_v(self, next_obs: Tensor) -> Tensor:
        action, log_prob = tanh_gaussian_sample(*self._actor(next_obs))
        q = self._critic(next_obs, action, target=True).index_select(0, self._subset())  # [M, B]
        return q.min(0).values - self._alpha.value * log_prob

    def _actor_q(self, obs: Tensor, action: Tensor) -> Tensor:
        return self._critic(obs, action).mean(0)  # every member


@POLICY_REGISTRY.register('droq')
class DroQPolicy(REDQPolicy):
    """DroQ (arXiv:2110.02034): two critics whose hidden blocks are Linear, Dropout, LayerNorm, ReLU; the target
    takes the min of both target critics, with dropout live in them (the learn step holds every critic in
    training mode; collection and evaluation in eval mode, dropout off). As the paper, the actor maximises the
    mean of the two Qs (sbx takes their min), once per G critic steps.
    """

    capabilities = REDQPolicy.capabilities
    config = dict(
        type='droq',                         # the registered policy name
        model=dict(
            n_critics=2,                     # two critics, as SAC
            dropout=0.01,                    # the paper's dropout rate in the critics
            layer_norm=True,                 # LayerNorm after dropout in each hidden block
        ),
        learn=dict(
            subset_size=2,                   # the min over both critics
        ),
    )
