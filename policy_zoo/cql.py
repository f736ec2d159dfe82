"""Conservative Q-Learning (Kumar et al. 2020, CQL(H)) on SAC's hooks, for learning from fixed data (``-m offline``)."""
from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from easydict import EasyDict
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import LearnedScalar, tanh_gaussian_sample
from ding_lite.utils.default_config import ConfigError
from .discrete_sac import DiscreteSACPolicy
from .sac import SACPolicy


class LagrangeWeight(LearnedScalar):
    """CQL's learned weight alpha' of the conservative gap (the paper's Lagrange form, DI-engine's ``with_lagrange``):
    the critics minimise ``alpha' (gap - thresh)``, and alpha' takes a step up while the gap exceeds ``thresh``, down
    while it is below (Adam on ``log alpha'``, its gradient ``-alpha' mean(gap - thresh)`` over the critics)."""

    def __init__(self, thresh: float, lr: float) -> None:
        super().__init__(0.0, lr)  # log alpha': alpha' starts at 1
        self.thresh = float(thresh)

    @property
    def value(self) -> Tensor:
        return self.raw.detach().exp().clamp(max=1e6)

    def weigh(self, gap: Tensor) -> Tensor:
        """``alpha' (gap - thresh)`` per critic (``gap``: ``[E]``) for the critics' loss, with a term of value 0 that
        gives ``raw`` its gradient (so that a stacked run's one backward pass reaches every seed's alpha')."""
        weight = self.raw.exp().clamp(max=1e6)
        excess = gap - self.thresh
        dual = (weight.detach() - weight) * excess.detach().mean()  # 0; d/d raw: -alpha' mean(excess)
        return weight.detach() * excess + dual / excess.numel()

    def step(self) -> Tensor:
        """alpha's step on the gradient the critics' backward pass left; alpha' after it."""
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return self.value


class _Conservative:
    """What CQL adds to a SAC update: ``min_q_weight * (logsumexp_a Q(s, a) - Q(s, a_data))`` per critic, added to
    the critics' loss (``_conservative_gap``: ``[E]``), weighed by a learned alpha' with ``with_lagrange``, and a TD
    target with or without the entropy bonus."""

    capabilities: ClassVar[frozenset[str]] = frozenset({'cloning'})
    config = dict(
        random_collect_size=0,           # offline data needs no warm-up
        learn=dict(
            num_actions=10,              # actions sampled per state for the conservative term (Box actions)
            min_q_weight=1.0,            # the conservative term's weight
            with_lagrange=False,         # learn a weight alpha' of the term that holds its gap at lagrange_thresh
            lagrange_thresh=-1.0,        # that gap (the paper's tau, e.g. 5 or 10); <= 0: no learned weight (DI-engine)
            with_q_entropy=False,        # the TD target with SAC's entropy bonus (DI-engine's default: without)
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        if not cfg.learn.num_actions >= 1:
            raise ConfigError(f"policy.learn.num_actions must be >= 1, got {cfg.learn.num_actions!r}")

    def _init_learn(self) -> None:
        super()._init_learn()
        learn = self._cfg.learn  # DI-engine's rule: a learned weight only with a positive threshold
        self._alpha_prime = LagrangeWeight(learn.lagrange_thresh, learn.learning_rate_q).to(self._device) \
            if learn.with_lagrange and learn.lagrange_thresh > 0 else None

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        loss, td, q, target_q = super()._critic_loss(batch)
        gap = self._cfg.learn.min_q_weight * self._conservative_gap(batch, q)  # [E]
        if self._alpha_prime is not None:
            gap = self._alpha_prime.weigh(gap)
        return loss + gap.sum(), td, q, target_q

    def _step_critic_extras(self) -> dict[str, Tensor]:
        return {} if self._alpha_prime is None else {'alpha_prime': self._alpha_prime.step()}

    def _target_bonus(self, log_prob: Tensor) -> Tensor:
        return super()._target_bonus(log_prob) if self._cfg.learn.with_q_entropy else torch.zeros_like(log_prob)

    def _monitor_vars_learn(self) -> list[str]:
        return super()._monitor_vars_learn() + (['alpha_prime'] if self._alpha_prime is not None else [])

    def _state_dict_learn(self) -> dict[str, Any]:
        state = super()._state_dict_learn()
        return state if self._alpha_prime is None else {**state, 'alpha_prime': self._alpha_prime.state_dict()}

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        super()._load_state_dict_learn(state)
        if self._alpha_prime is not None and 'alpha_prime' in state:  # (a SAC checkpoint has none: alpha' = 1)
            self._alpha_prime.load_state_dict(state['alpha_prime'])


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
