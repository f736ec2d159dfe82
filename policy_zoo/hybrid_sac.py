"""Hybrid SAC (Delalleau et al. 2019, arXiv:1912.11077): a Discrete choice and a Box action taken together."""
from __future__ import annotations

import math
from typing import Any, ClassVar

import torch.nn.functional as F
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import Temperature
from ding_lite.rl_utils.entropy import tanh_gaussian_sample
from .sac import SACPolicy


@POLICY_REGISTRY.register('hybrid_sac')
class HybridSACPolicy(SACPolicy):
    """SAC for an env whose actions are a ``Tuple`` or ``Dict`` of a ``Discrete`` and a 1-D ``Box`` (``envs.hybrid``):
    a categorical choice and one tanh-Gaussian over the Box, each with a temperature of its own; critics on the Box
    action give a Q per choice, so the expectations over the choice are exact, as discrete SAC's are.

    The stored action is ``[choice, box...]``. ``policy.type='sac'`` on such an env runs as this policy (said once).
    """

    action_space_type: ClassVar[str] = 'hybrid'
    collect_wrapper: ClassVar[str] = 'hybrid_sample'
    eval_wrapper: ClassVar[str] = 'hybrid_deterministic_sample'
    capabilities: ClassVar[frozenset[str]] = frozenset()  # sequences, reward heads, cloning: not over a choice yet
    _actor_stat_names: ClassVar[tuple[str, ...]] = ('mu', 'log_sigma', 'choice_entropy', 'alpha_choice')
    config = dict(
        type='hybrid_sac',
        learn=dict(
            target_entropy_choice=None,       # the choice's target entropy; None: choice_entropy_ratio * log K
            choice_entropy_ratio=0.89,        # as discrete SAC's target_entropy_ratio
        ),
    )

    @classmethod
    def default_model(cls) -> str:
        return 'hybrid_qac'

    def _init_learn(self) -> None:
        super()._init_learn()
        learn = self._cfg.learn
        target = learn.target_entropy_choice
        if target is None:
            target = learn.choice_entropy_ratio * math.log(self._model.choices)
        self._alpha_choice = Temperature(learn.alpha, target if learn.auto_alpha else None, learn.learning_rate_alpha,
                                         learn.log_space).to(self._device)
        self._choice_entropy: Tensor | None = None  # the last actor loss's, for the choice's temperature

    def _hybrid_actor(self, obs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(log pi(choice) [B, K], mu, sigma)``."""
        output = self._learn_model.forward(obs, mode='compute_actor')
        mu, sigma = output['logit']
        return F.log_softmax(output['choice_logit'], dim=-1), mu, sigma

    def _q_pred(self, batch: Batch) -> Tensor:
        """Every critic's Q of the stored ``[choice, box...]``, ``[E, B]``."""
        q_all = self._critic(batch.obs, batch.action[:, 1:])                 # [E, B, K]
        choice = batch.action[:, 0].long().view(1, -1, 1).expand(q_all.shape[0], -1, 1)
        return q_all.gather(2, choice).squeeze(2)

    def _box_q(self, obs: Tensor, mu: Tensor, sigma: Tensor, target: bool = False) -> tuple[Tensor, Tensor]:
        """``(min Q(s, a_k, k) [B, K], log pi(a_k) [B] or [B, K])``: one reparameterised Box draw for all choices
        (a shared Gaussian), or one per choice from its own (``model.box_per_choice``), each valued as that choice."""
        box, log_prob = tanh_gaussian_sample(mu, sigma)
        if mu.dim() == 2:
            return self._critic(obs, box, target=target).min(0).values, log_prob
        batch, choices = box.shape[:2]
        q = self._critic(obs.repeat_interleave(choices, 0), box.reshape(batch * choices, -1), target=target)
        q = q.reshape(q.shape[0], batch, choices, choices).diagonal(dim1=2, dim2=3)  # [E, B, K]: Q(s, a_k, k)
        return q.min(0).values, log_prob

    def _soft_target_v(self, next_obs: Tensor) -> Tensor:
        """``sum_k pi(k) (min Q(s', a'_k, k) - alpha_k log pi(k) - alpha log pi(a'_k))``, ``a'_k`` the Box draw
        (one shared by the choices, or each choice's own)."""
        log_pi, mu, sigma = self._hybrid_actor(next_obs)
        q_min, log_prob = self._box_q(next_obs, mu, sigma, target=True)          # [B, K], [B] or [B, K]
        log_prob = log_prob.unsqueeze(-1) if log_prob.dim() == 1 else log_prob
        return (log_pi.exp() * (q_min - self._alpha_choice.value * log_pi - self._alpha.value * log_prob)).sum(-1)

    def _actor_loss(self, obs: Tensor) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
        """``sum_k pi(k) (alpha_k log pi(k) + alpha log pi(a_k) - min Q(s, a_k, k))`` over reparameterised Box
        actions; the entropy returned is the Box's (expected over the choices with a Gaussian per choice), for SAC's
        temperature (``_actor_step`` moves the choice's on its own)."""
        log_pi, mu, sigma = self._hybrid_actor(obs)
        q_min, log_prob = self._box_q(obs, mu, sigma)
        pi = log_pi.exp()
        if log_prob.dim() == 2:  # a Gaussian per choice: the Box's entropy in expectation over the choice
            log_prob = (pi * log_prob).sum(-1)
        loss = (pi * (self._alpha_choice.value * log_pi - q_min)).sum(-1) + self._alpha.value * log_prob
        self._choice_entropy = -(pi * log_pi).sum(-1).detach()
        stats = {'mu': mu.detach().mean(), 'log_sigma': sigma.detach().log().mean(),
                 'choice_entropy': self._choice_entropy.mean(), 'alpha_choice': self._alpha_choice.value}
        return loss.mean(), -log_prob.detach(), stats

    def _actor_step(self, obs: Tensor) -> dict[str, Tensor]:
        stats = super()._actor_step(obs)
        if self._alpha_choice.learned:
            stats['alpha_choice_loss'] = self._alpha_choice.update(self._choice_entropy)
        return stats

    def _collect_entropy(self, output: dict[str, Tensor], kwargs: dict[str, Any]) -> Tensor:
        """The Box's entropy (as SAC's; expected over the choice with a Gaussian per choice) plus the choice's."""
        pi = F.softmax(output['choice_logit'], dim=-1)
        box = super()._collect_entropy(output, kwargs)   # [B], or [B, K] with a Gaussian per choice
        box = (pi * box).sum(-1) if box.dim() == 2 else box
        return box - (pi * pi.clamp_min(1e-30).log()).sum(-1)

    def _monitor_vars_learn(self) -> list[str]:
        return super()._monitor_vars_learn() + (['alpha_choice_loss'] if self._alpha_choice.learned else [])

    def _state_dict_learn(self) -> dict[str, Any]:
        return super()._state_dict_learn() | {'alpha_choice': self._alpha_choice.state_dict()}

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        super()._load_state_dict_learn(state)
        self._alpha_choice.load_state_dict(state['alpha_choice'])

    def _default_target_entropy(self) -> float:
        """The Box's: ``-D``."""
        return -float(self._model.action_size)


__all__ = ['HybridSACPolicy']
