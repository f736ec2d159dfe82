"""SAC-v1 on SAC's hooks: a state-value network and its Polyak target in place of target critics."""
from __future__ import annotations

from typing import ClassVar

import torch
from easydict import EasyDict
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import make_adam, tanh_gaussian_sample
from ding_lite.utils.default_config import ConfigError
from .sac import SACPolicy


@POLICY_REGISTRY.register('sac_v1')
class SACv1Policy(SACPolicy):
    """SAC-v1 (arXiv:1801.01290), as RL Coach's agent: ``V_psi`` with its Polyak target ``V_psi_bar``, two Q networks
    without targets, a fixed temperature. Q's target is ``r + gamma (1 - done) V_psi_bar(s')``; V's is
    ``min_i Q_i(s, a~) - alpha log pi(a~|s)`` for a fresh ``a~``. V learns with the critics' optimizer and rate.
    """
    capabilities = frozenset({'cloning'})  # its update is not written for sequences or reward heads

    value_network: ClassVar[bool] = True
    config = dict(
        type='sac_v1',                       # the registered policy name
        model=dict(value_network=True),      # V_psi (the model's compute_value)
        learn=dict(
            auto_alpha=False,                # the paper's fixed temperature (alpha; reward_scale sets the balance)
        ),
    )

    def _init_learn(self) -> None:
        super()._init_learn()
        value = dict(self._model.value.named_parameters(prefix='value'))
        critics = [*self._model.critic.parameters(), *value.values()]
        self._optimizer_q = make_adam(critics, self._cfg.learn.learning_rate_q, self._cfg.learn.adam_betas,
                                      self._cfg.learn.weight_decay_q, self._cfg.learn.decoupled_weight_decay)
        self._critic_params = value  # Polyak moves V_psi_bar only: the Q networks have no targets

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        if not cfg.model.get('value_network'):
            raise ConfigError("sac_v1 learns a state-value network: policy.model.value_network must be True")

    def _value(self, obs: Tensor, target: bool = False) -> Tensor:
        model = self._target_model if target else self._learn_model
        return model.forward(obs, mode='compute_value')['value']

    def _soft_target_v(self, next_obs: Tensor) -> Tensor:
        return self._value(next_obs, target=True)

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        q_loss, td, q, target_q = super()._critic_loss(batch)
        with torch.no_grad():
            action, log_prob = tanh_gaussian_sample(*self._actor(batch.obs))
            v_target = self._critic(batch.obs, action).min(0).values - self._alpha.value * log_prob
        v_loss = (batch.weight * (self._value(batch.obs) - v_target).pow(2)).mean()
        return q_loss + v_loss, td, q, target_q
