"""Conservative Q-Learning (Kumar et al. 2020, CQL(H)) on SAC's hooks, for learning from fixed data (``-m offline``)."""
from __future__ import annotations

import math
from typing import Any

import torch
from easydict import EasyDict
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import LearnedScalar, tanh_gaussian_sample
from ding_lite.rl_utils.critic_term import CriticTerm
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


class ConservativeTerm(CriticTerm):
    """What CQL adds to the critics' loss: ``min_q_weight * (logsumexp_a Q(s, a) - Q(s, a_data))`` per critic (the
    policy's ``_conservative_gap``: ``[E]``), weighed by a learned alpha' with ``with_lagrange``."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        learn = policy.cfg.learn  # DI-engine's rule: a learned weight only with a positive threshold
        self.weight, self.gap, self.with_q_entropy = learn.min_q_weight, policy._conservative_gap, learn.with_q_entropy
        self.alpha_prime = LagrangeWeight(learn.lagrange_thresh, learn.learning_rate_q) \
            if learn.with_lagrange and learn.lagrange_thresh > 0 else None

    @staticmethod
    def check_config(cfg: EasyDict) -> None:
        if not cfg.learn.num_actions >= 1:
            raise ConfigError(f"policy.learn.num_actions must be >= 1, got {cfg.learn.num_actions!r}")

    def target_bonus(self, alpha_log_pi: Tensor) -> Tensor:
        """SAC's entropy bonus, or 0 without ``with_q_entropy`` (DI-engine's CQL default)."""
        return alpha_log_pi if self.with_q_entropy else torch.zeros_like(alpha_log_pi)

    def add(self, loss: Tensor, batch: Batch, q: Tensor) -> Tensor:
        gap = self.weight * self.gap(batch, q)  # [E]
        if self.alpha_prime is not None:
            gap = self.alpha_prime.weigh(gap)
        return loss + gap.sum()

    def step(self) -> dict[str, Tensor]:
        return {} if self.alpha_prime is None else {'alpha_prime': self.alpha_prime.step()}

    def stat_names(self) -> list[str]:
        return [] if self.alpha_prime is None else ['alpha_prime']

    def learn_state(self) -> dict[str, Any]:
        return {} if self.alpha_prime is None else {'alpha_prime': self.alpha_prime.state_dict()}

    def load_learn_state(self, state: dict[str, Any]) -> None:
        if self.alpha_prime is not None and 'alpha_prime' in state:  # (a SAC checkpoint has none: alpha' = 1)
            self.alpha_prime.load_state_dict(state['alpha_prime'])


# what both CQL classes declare: their settings, and the features their update is written for
CQL_CAPABILITIES: frozenset[str] = frozenset({'cloning'})
CQL_LEARN = dict(
    num_actions=10,              # actions sampled per state for the conservative term (Box actions)
    min_q_weight=1.0,            # the conservative term's weight
    with_lagrange=False,         # learn a weight alpha' of the term that holds its gap at lagrange_thresh
    lagrange_thresh=-1.0,        # that gap (the paper's tau, e.g. 5 or 10); <= 0: no learned weight (DI-engine)
    with_q_entropy=False,        # the TD target with SAC's entropy bonus (DI-engine's default: without)
)


@POLICY_REGISTRY.register('cql')
class CQLPolicy(SACPolicy):
    """CQL for Box actions (DI-engine's ``cql``, min_q_version 3): the logsumexp over ``num_actions`` uniform actions,
    actions of ``pi(s)`` and of ``pi(s')`` (all at ``s``), each importance-weighted by its density."""

    capabilities = CQL_CAPABILITIES
    critic_term = ConservativeTerm
    config = dict(type='cql', random_collect_size=0, learn=CQL_LEARN)  # offline data needs no warm-up

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
class DiscreteCQLPolicy(DiscreteSACPolicy):
    """CQL for Discrete actions on discrete SAC: the logsumexp over every allowed action, exact."""

    capabilities = CQL_CAPABILITIES
    critic_term = ConservativeTerm
    config = dict(type='discrete_cql', random_collect_size=0, learn=CQL_LEARN)

    def _conservative_gap(self, batch: Batch, q: Tensor) -> Tensor:
        q_all = self._critic(batch.obs)                              # [E, B, n]
        output = self._learn_model.forward(batch.obs, mode='compute_actor')
        if 'action_mask' in output:
            q_all = q_all.masked_fill(~output['action_mask'].bool(), -math.inf)
        return torch.logsumexp(q_all, -1).mean(-1) - q.mean(-1)
