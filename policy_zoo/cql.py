"""Conservative Q-Learning (Kumar et al. 2020, CQL(H)) on SAC's hooks, for learning from fixed data (``-m offline``)."""
from __future__ import annotations

import math
from typing import ClassVar

import torch
from easydict import EasyDict
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import tanh_gaussian_sample
from ding_lite.utils.default_config import ConfigError
from .discrete_sac import DiscreteSACPolicy
from .sac import SACPolicy

class _Conservative:
    """What CQL adds to a SAC update: ``min_q_weight * (logsumexp_a Q(s, a) - Q(s, a_data))`` per critic, added to
    the critics' loss (``_conservative_gap``: ``[E]``), and a TD target with or without the entropy bonus."""

    capabilities: ClassVar[frozenset[str]] = frozenset({'cloning'})
    config = dict(
        random_collect_size=0,           # offline data needs no warm-up
        learn=dict(
            num_actions=10,              # actions sampled per state for the conservative term (Box actions)
            min_q_weight=1.0,            # the conservative term's weight
            with_lagrange=False,         # DI-engine's key: a learned weight where lagrange_thresh > 0 (not here yet)
            lagrange_thresh=-1.0,        # DI-engine's key: the gap the learned weight holds; <= 0: min_q_weight
            with_q_entropy=False,        # the TD target with SAC's entropy bonus (DI-engine's default: without)
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        if cfg.learn.with_lagrange and cfg.learn.lagrange_thresh > 0:  # DI-engine's rule for the learned weight
            raise ConfigError(f"policy.learn.with_lagrange=True with lagrange_thresh={cfg.learn.lagrange_thresh}: "
                              f"CQL's learned conservative weight is not here yet; set with_lagrange=False and "
                              f"choose learn.min_q_weight (DI-engine's default 1.0)")
        if not cfg.learn.num_actions >= 1:
            raise ConfigError(f"policy.learn.num_actions must be >= 1, got {cfg.learn.num_actions!r}")

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        loss, td, q, target_q = super()._critic_loss(batch)
        gap = self._conservative_gap(batch, q)                      # [E]
        return loss + self._cfg.learn.min_q_weight * gap.sum(), td, q, target_q


@POLICY_REGISTRY.register('cql')
class CQLPolicy(_Conservative, SACPolicy):
    """CQL for Box actions (DI-engine's ``cql``, min_q_version 3): the logsumexp over ``num_actions`` uniform actions,
    actions of ``pi(s)`` and of ``pi(s')`` (all at ``s``), each importance-weighted by its density."""

    config = dict(type='cql')          # the registered policy name
    capabilities = _Conservative.capabilities  # (declared on each class: a mixin's are not inherited)

    def _conservative_gap(self, batch: Batch, q: Tensor) -> Tensor:
        obs, n = batch.obs, self._cfg.learn.num_actions
        rows = obs.repeat_interleave(n, 0)
        uniform = torch.rand(rows.shape[0], self._model.action_size, device=rows.device) * 2 - 1
        here, log_here = tanh_gaussian_sample(*self._actor(rows))
        there, log_there = tanh_gaussian_sample(*self._actor(batch.next_obs.repeat_interleave(n, 0)))
        uniform_density = self._model.action_size * math.log(0.5)  # log of U(-1, 1)'s density per action dim
        samples = [self._critic(rows, uniform) - uniform_density,
                   self._critic(rows, there.detach()) - log_there.detach(),
                   self._critic(rows, here.detach()) - log_here.detach()]
        q_sampled = torch.cat([s.unflatten(-1, (obs.shape[0], n)) for s in samples], -1)  # [E, B, 3n]
        return torch.logsumexp(q_sampled, -1).mean(-1) - q.mean(-1)

    def _soft_target_v(self, next_obs: Tensor) -> Tensor:
        if self._cfg.learn.with_q_entropy:
            return super()._soft_target_v(next_obs)
        action, log_prob = tanh_gaussian_sample(*self._actor(next_obs))
        return self._heads.soft_value(self._critic(next_obs, action, target=True), torch.zeros_like(log_prob))


@POLICY_REGISTRY.register('discrete_cql')
class DiscreteCQLPolicy(_Conservative, DiscreteSACPolicy):
    """CQL for Discrete actions on discrete SAC: the logsumexp over every allowed action, exact."""

    config = dict(type='discrete_cql')  # the registered policy name
    capabilities = _Conservative.capabilities

    def _conservative_gap(self, batch: Batch, q: Tensor) -> Tensor:
        q_all = self._critic(batch.obs)                              # [E, B, n]
        output = self._learn_model.forward(batch.obs, mode='compute_actor')
        if 'action_mask' in output:
            q_all = q_all.masked_fill(~output['action_mask'].bool(), -math.inf)
        return torch.logsumexp(q_all, -1).mean(-1) - q.mean(-1)

    def _soft_target_v(self, next_obs: Tensor) -> Tensor:
        if self._cfg.learn.with_q_entropy:
            return super()._soft_target_v(next_obs)
        pi = self._log_pi(next_obs).exp()
        return self._heads.expectation(pi, self._heads.reduce(self._critic(next_obs, target=True)))
