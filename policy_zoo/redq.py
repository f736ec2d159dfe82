"""REDQ, DroQ, SAC-N and EDAC on SAC's hooks: an ensemble of critics, a target from some or all of them."""
from __future__ import annotations

import torch
from easydict import EasyDict
from torch import Tensor

from ding_lite.data import Batch
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
    ``collect.n_sample``). ``subset_size=None``: all N (SAC-N's target); ``actor_q='min'``: the actor climbs the
    min of all N (SAC-N's); ``eta`` > 0 adds EDAC's ensemble diversity term to the critics' loss.
    """
    capabilities = frozenset({'cloning'})  # its update is not written for sequences or reward heads

    config = dict(
        type='redq',                         # the registered policy name
        model=dict(
            n_critics=10,                    # N: the critic ensemble (REDQ's ensemble_size)
        ),
        learn=dict(
            subset_size=2,                   # M: members whose min makes each update's target; None: all N
            actor_q='mean',                  # what the actor climbs: the members' 'mean' (REDQ) or 'min' (SAC-N)
            eta=0.0,                         # EDAC's weight of the ensemble's action-gradient similarity (0: none)
            with_q_entropy=True,             # the TD target with SAC's entropy bonus (DI-engine's EDAC: False)
            policy_delay=20,                 # G: critic steps per actor (and alpha) step; the papers' MuJoCo UTD
            update_per_collect=20,           # learn steps per collect: G per env step with collect.n_sample=1
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        learn, n = cfg.learn, cfg.model.get('n_critics')
        m = n if learn.subset_size is None else learn.subset_size
        if not (isinstance(n, int) and isinstance(m, int) and 1 <= m <= n):
            raise ConfigError(f"{cfg.type} needs 1 <= policy.learn.subset_size <= policy.model.n_critics (or "
                              f"subset_size None: all), got subset_size={learn.subset_size!r}, n_critics={n!r}")
        if learn.actor_q not in ('mean', 'min'):
            raise ConfigError(f"policy.learn.actor_q must be 'mean' (REDQ) or 'min' (SAC-N), got {learn.actor_q!r}")
        if not (isinstance(learn.eta, (int, float)) and learn.eta >= 0):
            raise ConfigError(f"policy.learn.eta (EDAC's diversity weight) must be a number >= 0, got {learn.eta!r}")
        shape = cfg.model.get('obs_shape')
        if learn.eta > 0 and (n < 2 or isinstance(shape, dict) or isinstance(shape, (list, tuple)) and len(shape) > 1):
            raise ConfigError(f"policy.learn.eta={learn.eta} (EDAC's diversity term) needs n_critics >= 2 and vector "
                              f"observations, got n_critics={n!r}, obs_shape={shape!r}")

    def _subset(self) -> Tensor:
        """M member indices, without replacement: a fresh draw on the learner's device (no host sync)."""
        return torch.rand(self._n_critics, device=self._device).argsort()[:self._cfg.learn.subset_size]

    def _soft_target_v(self, next_obs: Tensor) -> Tensor:
        action, log_prob = tanh_gaussian_sample(*self._actor(next_obs))
        q = self._critic(next_obs, action, target=True)  # [N, B]
        if self._cfg.learn.subset_size not in (None, self._n_critics):
            q = q.index_select(0, self._subset())  # [M, B]
        return q.min(0).values - self._target_bonus(log_prob)

    def _target_bonus(self, log_prob: Tensor) -> Tensor:
        return super()._target_bonus(log_prob) if self._cfg.learn.with_q_entropy else torch.zeros_like(log_prob)

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        loss, td, q, target_q = super()._critic_loss(batch)
        if self._cfg.learn.eta > 0:
            loss = loss + self._cfg.learn.eta * self._gradient_similarity(batch.obs, batch.action)
        return loss, td, q, target_q

    def _gradient_similarity(self, obs: Tensor, action: Tensor) -> Tensor:
        """EDAC's diversity term (arXiv:2110.01548, eq. 7): ``sum_{i != j} <g_i, g_j> / (N - 1)``, averaged over the
        batch, ``g_i`` the unit gradient of member i's Q in the data's action (each member its own copy of it)."""
        n = self._n_critics
        obs = obs.expand(n, *obs.shape)
        # torch.func's grad: differentiable in the critics' weights, and mapped over a seed axis as the rest
        grad = torch.func.grad(lambda a: self._critic(obs, a).sum())(action.detach().expand(n, *action.shape))
        unit = grad / (grad.norm(dim=-1, keepdim=True) + 1e-10)
        pairs = unit.sum(0).pow(2).sum(-1) - unit.pow(2).sum((0, -1))  # |sum_i g_i|^2 - sum_i |g_i|^2: i != j
        return pairs.mean() / (n - 1)

    def _actor_q(self, obs: Tensor, action: Tensor) -> Tensor:
        q = self._critic(obs, action)  # every member
        return q.mean(0) if self._cfg.learn.actor_q == 'mean' else q.min(0).values


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


# SAC-N's settings of REDQ's update (EDAC's too): the min of all N critics for the target and the actor, one critic
# step per actor step
SAC_N_LEARN = dict(
    subset_size=None,                    # the target's min over all N
    actor_q='min',                       # the actor climbs the min of all N
    policy_delay=1,                      # an actor step per critic step, as SAC
    update_per_collect=1,                # SAC's
)


@POLICY_REGISTRY.register('sac_n')
class SACNPolicy(REDQPolicy):
    """SAC-N (An et al. 2021, arXiv:2110.01548): SAC with N critics, the TD target and the actor on the min of all
    N, one critic step per actor step: REDQ's settings ``subset_size=None``, ``actor_q='min'``, ``policy_delay=1``.
    Made for offline data (``-m offline``), where a large N keeps the actor off actions the data lacks."""

    capabilities = REDQPolicy.capabilities
    config = dict(
        type='sac_n',                        # the registered policy name
        model=dict(
            n_critics=10,                    # N (the paper's 10 to 500, by task)
        ),
        learn=SAC_N_LEARN,
    )


@POLICY_REGISTRY.register('edac')
class EDACPolicy(REDQPolicy):
    """EDAC (An et al. 2021): SAC-N (REDQ's update with ``SAC_N_LEARN``) with the ensemble diversity term, ``eta``
    times the pairwise cosine similarities of the members' Q gradients in the data's actions (summed over pairs, over
    N - 1), so that fewer critics do what SAC-N needs many for. DI-engine's ``model.ensemble_num`` is ``n_critics``."""

    capabilities = REDQPolicy.capabilities
    config = dict(
        type='edac',                         # the registered policy name
        model=dict(
            n_critics=10,                    # N (the paper's 10 for MuJoCo)
            ensemble_num=None,               # DI-engine's name for n_critics; set, it replaces it
        ),
        learn=dict(
            **SAC_N_LEARN,
            eta=1.0,                         # the diversity term's weight (the paper's 1 for HalfCheetah; DI-engine's
                                             # config 0.1)
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        ensemble_num = cfg.model.pop('ensemble_num', None)
        if ensemble_num is not None:
            cfg.model.n_critics = ensemble_num
        super().check_config(cfg)
