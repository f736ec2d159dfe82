"""CrossQ on SAC's hooks: BatchRenorm in actor and critics, no target network."""
from __future__ import annotations

import contextlib
import warnings
from typing import Iterator

import torch
from easydict import EasyDict
from torch import Tensor, nn

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import tanh_gaussian_sample
from ding_lite.utils.default_config import ConfigWarning
from .sac import SACPolicy


@contextlib.contextmanager
def eval_mode(module: nn.Module) -> Iterator[None]:
    """``module`` in eval mode inside (BatchRenorm reads its running statistics and leaves them as they are)."""
    was = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was)


@POLICY_REGISTRY.register('crossq')
class CrossQPolicy(SACPolicy):
    """CrossQ (arXiv:1902.05605): SAC without target networks, BatchRenorm before every Linear of the actor and the
    critics. The critics see ``[s; s']`` with ``[a; a']`` in one forward in training mode, so that the BatchRenorm
    statistics come from both halves; the gradient flows through the ``(s, a)`` half only. ``a'`` is drawn with
    the actor in eval mode, and the actor's step reads the critics in eval mode (their statistics stay). The
    actor (and alpha) step once per ``policy_delay`` critic steps; Adam's beta1 is 0.5. Collection and evaluation
    run the model in eval mode, on the running statistics.
    """
    capabilities = frozenset({'cloning'})  # its update is not written for sequences or reward heads

    target_network = False
    config = dict(
        type='crossq',                       # the registered policy name
        model=dict(
            batch_renorm=dict(               # BatchRenorm before every Linear of the actor and the critics
                momentum=0.01,               # the new batch's weight in the running statistics (torch's convention)
                warmup_steps=100000,         # training batches of plain batch norm before renormalising
            ),
        ),
        learn=dict(
            learning_rate_q=1e-3,            # Adam's learning rate for the critics (the paper's)
            learning_rate_policy=1e-3,       # Adam's learning rate for the actor (the paper's)
            adam_betas=(0.5, 0.999),         # Adam's (beta1, beta2) for actor and critics: the paper's beta1 0.5
            policy_delay=3,                  # critic steps per actor (and alpha) step, the paper's 3
            target_theta=None,               # no target network: the critics bootstrap from themselves
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        if cfg.learn.target_theta is not None:
            warnings.warn(f"policy.learn.target_theta={cfg.learn.target_theta!r} has no effect: crossq has no "
                          f"target network", ConfigWarning, stacklevel=2)

    def _critic_td(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor]:
        """One critic forward of ``[s; s']`` and ``[a; a']`` in training mode; the target from the second half."""
        with torch.no_grad(), eval_mode(self._model.actor):
            next_action, log_prob = tanh_gaussian_sample(*self._actor(batch.next_obs))
        size = batch.obs.shape[0]
        q_both = self._critic(torch.cat([batch.obs, batch.next_obs]), torch.cat([batch.action, next_action]))
        q, q_next = q_both[:, :size], q_both[:, size:].detach()                         # [E, B] each
        target_q = self._bootstrap(batch, q_next.min(0).values - self._alpha.value * log_prob)
        return q - target_q, q, target_q

    def _actor_q(self, obs: Tensor, action: Tensor) -> Tensor:
        with eval_mode(self._model.critic):
            return super()._actor_q(obs, action)
