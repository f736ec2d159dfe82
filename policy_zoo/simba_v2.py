"""SimbaV2 (Lee et al., ICML 2025, arXiv:2502.15280) on SAC's hooks: hyperspherical networks whose weights are
projected back onto the sphere after every step, categorical critics trained by cross-entropy against the projected
distributional target, scaled rewards, and learning rates that decay over the run."""
from __future__ import annotations

import warnings
from typing import ClassVar

import torch
from easydict import EasyDict
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import tanh_gaussian_sample
from ding_lite.utils.default_config import ConfigError, ConfigWarning
from .sac import SACPolicy
from .simba import SimbaPolicy


def project_distribution(atoms: Tensor, probs: Tensor, support: Tensor) -> Tensor:
    """C51's projection (Bellemare et al. 2017): the distribution putting ``probs [B, K]`` on ``atoms [B, K]`` (each
    clamped into the support), moved onto the fixed ``support [K]`` by splitting each atom's mass between its two
    neighbours in proportion to closeness; ``[B, K]``."""
    v_min, v_max, bins = support[0], support[-1], support.shape[0]
    position = (atoms.clamp(v_min, v_max) - v_min) / (v_max - v_min) * (bins - 1)
    lower, upper = position.floor().long(), position.ceil().long()
    upper_weight = position - lower
    lower_weight = 1 - upper_weight  # an atom on a bin (lower == upper) keeps its whole mass there
    target = torch.zeros_like(probs)
    target.scatter_add_(-1, lower, probs * lower_weight)
    target.scatter_add_(-1, upper, probs * upper_weight)
    return target


@POLICY_REGISTRY.register('simba_v2')
class SimbaV2Policy(SACPolicy):
    """SAC on ``simba_v2_qac`` with the paper's values: Adam at 1e-4 decaying linearly to 5e-5 over the run, two
    updates per env step, temperature 0.01 at the start, a target entropy of ``-|A| / 2``, no weight decay. The
    critics' loss is the cross-entropy of each critic's bins against the target ``r + gamma (1 - done) (z - alpha log
    pi(a'|s'))`` projected onto the support, its distribution that of the target critic with the lower expected value
    (``clipped_double_q``, for envs that terminate) or the critics' mean; the actor climbs the critics' expected value
    (their min, or mean). Rewards are scaled by the model's running estimate of the discounted return's std."""

    capabilities: ClassVar[frozenset[str]] = frozenset()
    rate_schedule: ClassVar[bool] = True
    config = dict(
        type='simba_v2',                     # the registered policy name
        model=dict(type='simba_v2_qac'),     # SimbaV2's network
        learn=dict(
            update_per_collect=2,            # learn steps per collect call of n_sample (1) transitions: UTD 2
            learning_rate_q=1e-4,            # the paper's initial learning rates
            learning_rate_policy=1e-4,
            learning_rate_alpha=1e-4,
            learning_rate_end=5e-5,          # where the actor's and critics' rates have fallen by the run's end
            lr_decay_steps=None,             # learn steps of that fall; None: the run's budget (max_env_step x
                                             # update_per_collect / n_sample), constant where the run has none
            alpha=1e-2,                      # the paper's initial temperature
            clipped_double_q=True,           # the target from the critic with the lower value (envs that terminate);
                                             # False: the critics' mean (the paper's for envs that never do)
        ),
    )

    _default_target_entropy = SimbaPolicy._default_target_entropy  # the papers' -|A| / 2

    @classmethod
    def default_model(cls) -> str:
        return 'simba_v2_qac'

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        if (cfg.model.get('type') or cls.default_model()) != 'simba_v2_qac':
            raise ConfigError(f"policy 'simba_v2' learns categorical critics: model.type must be 'simba_v2_qac', got "
                              f"{cfg.model.type!r}")
        if cfg.learn.get('cuda_graph'):
            raise ConfigError("policy 'simba_v2': its learning rates change every step, which a captured CUDA graph "
                              "would hold fixed; set learn.cuda_graph=False")
        if cfg.learn.get('reward_scale', 1.0) != 1.0:
            warnings.warn("policy.learn.reward_scale multiplies rewards the model's reward scaler then divides by "
                          "the return's std: it has no effect", ConfigWarning, stacklevel=2)

    def _init_learn(self) -> None:
        super()._init_learn()
        for optimizer, part in ((self._optimizer_q, self._model.critic), (self._optimizer_policy, self._model.actor)):
            self.executor.after_step(optimizer, lambda part=part: self._model.project(part))
        self._lr = {id(o): o.param_groups[0]['lr'] for o in (self._optimizer_q, self._optimizer_policy)}

    @property
    def decay_steps(self) -> int | None:
        """Learn steps of the rates' fall: ``lr_decay_steps``, else the run's budget (``horizon``); None: constant."""
        return self._cfg.learn.lr_decay_steps or self.horizon

    def update(self, batch: Batch) -> dict[str, Tensor]:
        """The rates of this step (linear, from the initial ones to ``learning_rate_end`` over ``decay_steps``; set
        outside the update, so a run of many seeds stacks it), then SAC's update."""
        if self.decay_steps:
            fall = min(self.learn_steps / self.decay_steps, 1.0)
            for optimizer in (self._optimizer_q, self._optimizer_policy):
                start = self._lr[id(optimizer)]
                optimizer.param_groups[0]['lr'] = start + (self._cfg.learn.learning_rate_end - start) * fall
        return super().update(batch)

    def _critic_out(self, obs: Tensor, action: Tensor, target: bool = False) -> dict[str, Tensor]:
        model = self._target_model if target else self._learn_model
        out = model.forward({'obs': obs, 'action': action}, mode='compute_critic')
        q = out['q_value']
        return {'q': q if q.dim() == 2 else q.unsqueeze(0), 'logit': out['logit']}

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(loss, td [E, B], q [E, B], target_q [B])``: the summed critics' cross-entropy against the projected
        target; ``td`` the expected values' gap to the target's, for the logs and priorities."""
        target = self._target_distribution(batch)                                  # [B, K]
        support = self._model.support
        out = self._critic_out(batch.obs, batch.action)
        cross_entropy = -(target * out['logit'].log_softmax(-1)).sum(-1)           # [E, B]
        target_q = (target * support).sum(-1)
        return (batch.weight * cross_entropy).mean(-1).sum(), out['q'] - target_q, out['q'], target_q

    @torch.no_grad()
    def _target_distribution(self, batch: Batch) -> Tensor:
        action, log_prob = tanh_gaussian_sample(*self._actor(batch.next_obs))
        out = self._critic_out(batch.next_obs, action, target=True)
        probs = out['logit'].softmax(-1)                                           # [E, B, K]
        if self._cfg.learn.clipped_double_q:
            pick = out['q'].argmin(0)                                              # [B]
            probs = probs.gather(0, pick.view(1, -1, 1).expand(1, -1, probs.shape[-1]))[0]
        else:
            probs = probs.mean(0)
        atoms = self._bootstrap(batch, self._model.support - self._target_bonus(log_prob).unsqueeze(-1))
        return project_distribution(atoms, probs, self._model.support)

    def _actor_q(self, obs: Tensor, action: Tensor) -> Tensor:
        q = self._critic_out(obs, action)['q']
        return q.min(0).values if self._cfg.learn.clipped_double_q else q.mean(0)


__all__ = ['SimbaV2Policy', 'project_distribution']
