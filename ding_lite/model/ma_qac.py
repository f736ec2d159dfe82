"""Multi-agent actor-critics (DI-engine's MASAC models): one actor shared by the agents, reading each agent's own view
(``agent_state [B, A, N0]``), and critics reading the global state (``global_state [B, N1]``, or ``[B, A, N1]`` where
it is agent-specific): a centralised critic, a value per agent."""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ..registry import MODEL_REGISTRY
from .heads import ReparameterizationHead, ensemble_mlp, mlp
from .qac import _QAC, _flat_size


def _per_agent(global_state: Tensor, agent_state: Tensor) -> Tensor:
    """The global state with an agent axis: ``[B, A, N1]`` (a state shared by the agents is broadcast)."""
    if global_state.dim() == agent_state.dim():
        return global_state
    return global_state.unsqueeze(-2).expand(*agent_state.shape[:-1], global_state.shape[-1])


def _ensemble(critic: nn.Module, x: Tensor) -> Tensor:
    """The critics on ``[B, A, in]``: ``[E, B, A, out]`` (the ensemble takes rows)."""
    return critic(x.reshape(-1, x.shape[-1])).unflatten(1, x.shape[:-1])


class _MAQAC(_QAC):
    def __init__(self, agent_obs_shape: int | list, global_obs_shape: int | list, action_shape: int | list,
                 twin_critic: bool, activation: str) -> None:
        super().__init__()
        self.agent_obs_size = _flat_size(agent_obs_shape, 'agent_obs_shape')
        self.global_obs_size = _flat_size(global_obs_shape, 'global_obs_shape')
        self.action_size = _flat_size(action_shape, 'action_shape')
        self.twin_critic, self.n_critics = twin_critic, 2 if twin_critic else 1
        self.memory = None


@MODEL_REGISTRY.register('discrete_maqac')
class DiscreteMAQAC(_MAQAC):
    """Softmax actor ``agent_state -> logit [B, A, n]`` (``action_mask`` passed on) and (twin) critics
    ``global_state -> q [E, B, A, n]``: every action's value for each agent."""

    action_space_type = 'discrete'  # the actions it acts on (a policy of other actions refuses it)

    def __init__(
            self,
            agent_obs_shape: int | list,          # one agent's own observation (the actor's input)
            global_obs_shape: int | list,         # the global state (the critics' input), per agent or shared
            action_shape: int | list,             # actions per agent
            twin_critic: bool = False,            # two critics, the target takes their minimum
            actor_head_hidden_size: int = 64,     # width of the actor's hidden layers
            actor_head_layer_num: int = 1,        # the actor's hidden layers after its first
            critic_head_hidden_size: int = 64,    # width of the critics' hidden layers
            critic_head_layer_num: int = 1,       # the critics' hidden layers after their first
            activation: str = 'relu',             # relu, tanh, elu, gelu, silu or leaky_relu
    ) -> None:
        super().__init__(agent_obs_shape, global_obs_shape, action_shape, twin_critic, activation)
        self.actor = nn.Sequential(mlp(self.agent_obs_size, actor_head_hidden_size, actor_head_layer_num, activation),
                                   nn.Linear(actor_head_hidden_size, self.action_size))
        self.critic = ensemble_mlp(self.n_critics, self.global_obs_size, critic_head_hidden_size,
                                   critic_head_layer_num, self.action_size, activation)

    def compute_actor(self, obs: Any) -> dict[str, Tensor]:
        output = {'logit': self.actor(obs['agent_state'])}
        if 'action_mask' in obs:
            output['action_mask'] = obs['action_mask']
        return output

    def compute_critic(self, inputs: Any) -> dict[str, Tensor]:
        obs = inputs['obs'] if 'obs' in inputs else inputs
        q = _ensemble(self.critic, _per_agent(obs['global_state'], obs['agent_state']))
        return {'q_value': self._q_out(q)}  # [E, B, A, n]


@MODEL_REGISTRY.register('continuous_maqac')
class ContinuousMAQAC(_MAQAC):
    """Tanh-Gaussian actor ``agent_state -> (mu, sigma) [B, A, act]`` and (twin) critics ``(global_state, that
    agent's action) -> q [E, B, A]``."""

    action_space_type = 'continuous'  # the actions it acts on (a policy of other actions refuses it)

    def __init__(
            self,
            agent_obs_shape: int | list,          # one agent's own observation (the actor's input)
            global_obs_shape: int | list,         # the global state (the critics' input), per agent or shared
            action_shape: int | list,             # action size per agent
            twin_critic: bool = False,            # two critics, the target takes their minimum
            action_space: str = 'reparameterization',  # DI-engine's key; the only one: a tanh-squashed Gaussian
            actor_head_hidden_size: int = 64,     # width of the actor's hidden layers
            actor_head_layer_num: int = 1,        # the actor's hidden layers after its first
            critic_head_hidden_size: int = 64,    # width of the critics' hidden layers
            critic_head_layer_num: int = 1,       # the critics' hidden layers after their first
            activation: str = 'relu',             # relu, tanh, elu, gelu, silu or leaky_relu
            log_sigma_min: float = -20.0,         # lower clamp of the actor's log standard deviation
            log_sigma_max: float = 2.0,           # upper clamp of the actor's log standard deviation
    ) -> None:
        super().__init__(agent_obs_shape, global_obs_shape, action_shape, twin_critic, activation)
        if action_space != 'reparameterization':
            raise ValueError(f"ContinuousMAQAC supports action_space='reparameterization', got {action_space!r}")
        self.actor = nn.Sequential(mlp(self.agent_obs_size, actor_head_hidden_size, actor_head_layer_num, activation),
                                   ReparameterizationHead(actor_head_hidden_size, self.action_size, log_sigma_min,
                                                          log_sigma_max))
        self.critic = ensemble_mlp(self.n_critics, self.global_obs_size + self.action_size, critic_head_hidden_size,
                                   critic_head_layer_num, 1, activation)

    def compute_actor(self, obs: Any) -> dict[str, Any]:
        mu, sigma = self.actor(obs['agent_state'])
        return {'logit': [mu, sigma]}

    def compute_critic(self, inputs: dict[str, Any]) -> dict[str, Tensor]:
        obs, action = inputs['obs'], inputs['action']
        state = _per_agent(obs['global_state'], obs['agent_state'])
        q = _ensemble(self.critic, torch.cat([state, action.to(state.dtype)], dim=-1)).squeeze(-1)
        return {'q_value': self._q_out(q)}  # [E, B, A]


__all__ = ['DiscreteMAQAC', 'ContinuousMAQAC']
