"""Multi-agent SAC (DI-engine's MASAC, ``policy.multi_agent=True``): SAC's update over an agent axis. One actor is
shared by the agents (each reads its own view, ``agent_state``), the critics read the global state (a centralised
critic, a value per agent), and the team's one reward and done per env step are broadcast over the agents in the
TD target. Observations are DI-engine's dict (``agent_state [A, N0]``, ``global_state [N1]`` or ``[A, N1]``,
``action_mask [A, n]``); actions ``[A]`` (discrete) or ``[A, act]``."""
from __future__ import annotations

from typing import Any, ClassVar

from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from .discrete_sac import DiscreteSACPolicy
from .sac import SACPolicy


def team_critic_loss(batch: Batch, td: Tensor, q: Tensor, target_q: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """MASAC's critic loss from ``_critic_td``'s ``[E, B, A]``, ``[E, B, A]``, ``[B, A]``: the squared errors averaged
    over the agents (the TD target broadcasts the team's reward and done over them); ``|td|``, ``q`` and ``target_q``
    as their means over the agents, per sample."""
    loss = (batch.weight * td.pow(2).mean(-1)).mean(-1).sum()
    return loss, td.abs().mean(-1), q.mean(-1), target_q.mean(-1)


def team_actor_loss(loss: Tensor, entropy: Tensor, *stats: dict[str, Tensor]) -> tuple[Any, ...]:
    """MASAC's actor loss and entropy: SAC's (per agent, ``[A]`` and ``[B, A]``) averaged over the agents."""
    return (loss.mean(-1), entropy.mean(-1), *stats)


@POLICY_REGISTRY.register('masac')
class MASACPolicy(SACPolicy):
    """MASAC for Box actions (``continuous_maqac``): the critics read the global state with that agent's action."""

    agent_axis: ClassVar[bool] = True
    capabilities: ClassVar[frozenset[str]] = frozenset()  # memory, reward heads, cloning: not over an agent axis
    config = dict(type='masac', multi_agent=True)

    @classmethod
    def default_model(cls) -> str:
        return 'continuous_maqac'

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        return team_critic_loss(batch, *self._critic_td(batch))

    def _actor_loss(self, obs: Any) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
        return team_actor_loss(*super()._actor_loss(obs))


@POLICY_REGISTRY.register('discrete_masac')
class DiscreteMASACPolicy(DiscreteSACPolicy):
    """MASAC for Discrete actions (``discrete_maqac``): every action's value per agent from the global state;
    actions an agent's ``action_mask`` forbids get logit -1e8 in the target's expectation and the actor's loss."""

    agent_axis: ClassVar[bool] = True
    capabilities: ClassVar[frozenset[str]] = frozenset()
    config = dict(type='discrete_masac', multi_agent=True)

    @classmethod
    def default_model(cls) -> str:
        return 'discrete_maqac'

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        return team_critic_loss(batch, *self._critic_td(batch))

    def _actor_loss(self, obs: Any) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
        return team_actor_loss(*super()._actor_loss(obs))

    def _q_pred(self, batch: Batch) -> Tensor:
        q_all = self._critic(batch.obs)                                # [E, B, A, n]
        index = batch.action.long().unsqueeze(-1).expand(q_all.shape[0], *batch.action.shape, 1)
        return q_all.gather(-1, index).squeeze(-1)                     # [E, B, A]
