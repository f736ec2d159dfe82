"""SimBa (Lee et al., ICLR 2025, arXiv:2410.09754): running-statistics observation normalisation, residual blocks with
a pre-LayerNorm and a 4x inverted bottleneck, and a LayerNorm after the last block, for the actor and the critics."""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ..registry import MODEL_REGISTRY
from .heads import EnsembleLayerNorm, EnsembleLinear, ReparameterizationHead
from .obs_norm import RunningObsNorm
from .qac import check_action_space, ContinuousQAC, _flat_size, _QAC

EXPANSION = 4  # the blocks' inverted bottleneck: width -> 4 x width -> width


class SimbaBlock(nn.Module):
    """``x + W2 relu(W1 LN(x))`` with ``W1`` widening ``EXPANSION`` times; ``ensemble_size``: that many members in
    one batched module (``[E, B, width]``), each with its own weights and LayerNorm. ``dropout`` (DroQ's) after the
    activation."""

    def __init__(self, width: int, ensemble_size: int | None = None, dropout: float = 0.0) -> None:
        super().__init__()
        if ensemble_size is None:
            self.norm, self.up = nn.LayerNorm(width), nn.Linear(width, EXPANSION * width)
            self.down = nn.Linear(EXPANSION * width, width)
        else:
            self.norm = EnsembleLayerNorm(ensemble_size, width)
            self.up = EnsembleLinear(ensemble_size, width, EXPANSION * width)
            self.down = EnsembleLinear(ensemble_size, EXPANSION * width, width)
        self.dropout = dropout

    def forward(self, x: Tensor) -> Tensor:
        hidden = F.relu(self.up(self.norm(x)))
        if self.dropout > 0:
            hidden = F.dropout(hidden, self.dropout, self.training)
        return x + self.down(hidden)


def simba_trunk(in_size: int, width: int, blocks: int, ensemble_size: int | None = None,
                dropout: float = 0.0) -> nn.Sequential:
    """SimBa's encoder: a Linear into ``width``, ``blocks`` residual blocks, a LayerNorm after the last."""
    if ensemble_size is None:
        return nn.Sequential(nn.Linear(in_size, width), *[SimbaBlock(width) for _ in range(blocks)],
                             nn.LayerNorm(width))
    return nn.Sequential(EnsembleLinear(ensemble_size, in_size, width),
                         *[SimbaBlock(width, ensemble_size, dropout) for _ in range(blocks)],
                         EnsembleLayerNorm(ensemble_size, width))


@MODEL_REGISTRY.register('simba_qac')
class SimbaQAC(ContinuousQAC):
    """SimBa's tanh-Gaussian actor and critics, sized as the paper names them (blocks and hidden width of each).

    The observation normaliser (the paper's RSNorm) is the model's ``obs_norm``: the policy normalises every
    observation with it, collected data moves its statistics, and it is saved, resumed and exported with the
    weights. Critics as ``continuous_qac``'s: twin or ``n_critics`` in one batched module, ``n_quantiles`` (TQC) or
    ``reward_heads`` outputs each. ``compute_actor`` and ``compute_critic`` as ``continuous_qac``'s."""

    def __init__(
            self,
            obs_shape: int | list,                # observation size (vectors)
            action_shape: int | list,             # action size
            twin_critic: bool = True,             # two critics, the target takes their minimum (clipped double Q)
            action_space: str = 'reparameterization',  # DI-engine's key; the only one: a tanh-squashed Gaussian
            n_critics: int | None = None,         # critics in the ensemble; None: 2 with twin_critic, else 1
            n_quantiles: int = 1,                 # outputs per critic: 1, its Q; more, quantiles of the return (TQC)
            reward_heads: int = 1,                # values per critic: one per reward signal (policy.reward_signals)
            actor_num_blocks: int = 1,            # the actor's residual blocks (the paper's 1)
            actor_hidden_dim: int = 128,          # the actor's width (the paper's 128)
            critic_num_blocks: int = 2,           # each critic's residual blocks (the paper's 2)
            critic_hidden_dim: int = 512,         # each critic's width (the paper's 512)
            obs_norm: bool = True,                # RSNorm: observations normalised by running statistics
            obs_norm_clip: float | None = None,   # clip normalised observations to +-this; None: none (the paper's)
            dropout: float = 0.0,                 # dropout in the critics' blocks, after the activation (DroQ)
            layer_norm: bool = True,              # DroQ's flag: SimBa's blocks always have their LayerNorm
            log_sigma_min: float = -20.0,         # lower clamp of the actor's log standard deviation
            log_sigma_max: float = 2.0,           # upper clamp of the actor's log standard deviation
    ) -> None:
        _QAC.__init__(self)
        check_action_space(action_space, 'simba_qac')
        if not layer_norm:
            raise ValueError("model 'simba_qac': layer_norm=False is not SimBa (its blocks normalise their input); "
                             "use model type 'continuous_qac' for critics without LayerNorm")
        if reward_heads > 1 and n_quantiles > 1:
            raise ValueError("reward_heads > 1 (reward signals) and n_quantiles > 1 (TQC) cannot be combined")
        obs_size, self.action_size = _flat_size(obs_shape, 'obs_shape'), _flat_size(action_shape, 'action_shape')
        self.twin_critic, self.share_encoder = twin_critic, False
        self.n_critics, self.n_quantiles = n_critics or (2 if twin_critic else 1), n_quantiles
        self.reward_heads, self.memory = reward_heads, None
        if obs_norm:
            self.obs_norm = RunningObsNorm(obs_size, float('inf') if obs_norm_clip is None else obs_norm_clip)
        self.actor = nn.Sequential(simba_trunk(obs_size, actor_hidden_dim, actor_num_blocks),
                                   ReparameterizationHead(actor_hidden_dim, self.action_size, log_sigma_min,
                                                          log_sigma_max))
        self.critic = nn.Sequential(
            simba_trunk(obs_size + self.action_size, critic_hidden_dim, critic_num_blocks, self.n_critics, dropout),
            EnsembleLinear(self.n_critics, critic_hidden_dim, max(n_quantiles, reward_heads)))


__all__ = ['SimbaBlock', 'SimbaQAC', 'simba_trunk']
