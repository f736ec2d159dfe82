"""Curiosity (ICM, arXiv:1705.05363) as ML-Agents trains it: the reward is the error of a forward model predicting
the next state's encoding, the encoding shaped by an inverse model predicting the action."""
from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..registry import REWARD_MODEL_REGISTRY
from ..rl_utils import make_adam
from ..model.heads import mlp
from .base import RewardModel


@REWARD_MODEL_REGISTRY.register('curiosity')
class CuriosityRewardModel(RewardModel):
    """``reward = min(0.5 * |phi(s') - f(phi(s), a)|^2, 1 / strength)`` (the strength-scaled reward at most 1), zero
    until the first update; loss ``10 * (0.2 * forward + 0.8 * inverse)`` (ML-Agents' weights)."""

    ignore_done: ClassVar[bool] = True
    stat_keys: ClassVar[tuple[str, ...]] = ('forward_loss', 'inverse_loss')
    beta, loss_multiplier = 0.2, 10.0  # ML-Agents' forward/inverse weight and loss scale
    config = dict(
        strength=1.0,
        gamma=0.99,
        learning_rate=3e-4,    # Adam's, for the encoder and both models
        encoding_size=64,      # width of the state encoding
    )

    def __init__(self, cfg: dict, obs_size: int, action_size: int) -> None:
        super().__init__(cfg, obs_size, action_size)
        size = self.cfg.encoding_size
        self.encoder = mlp(obs_size, size, 1, 'silu')  # ML-Agents' network body: two SiLU layers, unnormalised
        self.inverse_model = nn.Sequential(nn.Linear(2 * size, 256), nn.SiLU(), nn.Linear(256, action_size))
        self.forward_model = nn.Sequential(nn.Linear(size + action_size, 256), nn.SiLU(), nn.Linear(256, size))
        self.register_buffer('updated', torch.zeros(()))  # 1 once trained: an untrained model rewards nothing
        self.optimizer = make_adam(self.parameters(), self.cfg.learning_rate)

    def _encode(self, batch: Any) -> tuple[Tensor, Tensor, Tensor]:
        return self.encoder(batch.obs.flatten(1).float()), self.encoder(batch.next_obs.flatten(1).float()), \
            self.action_input(batch.action)

    def _forward_error(self, state: Tensor, next_state: Tensor, action: Tensor) -> Tensor:
        predicted = self.forward_model(torch.cat([state, action], -1))
        return 0.5 * (next_state - predicted).pow(2).sum(-1)

    @torch.no_grad()
    def reward(self, batch: Any) -> Tensor:
        error = self._forward_error(*self._encode(batch))
        return error.clamp(max=1.0 / self.cfg.strength) * self.updated

    def train_step(self, batch: Any) -> dict[str, Tensor]:
        state, next_state, action = self._encode(batch)
        forward = self._forward_error(state, next_state, action).mean()
        predicted = self.inverse_model(torch.cat([state, next_state], -1))
        inverse = (predicted - action).pow(2).sum(-1).mean() if batch.action.is_floating_point() else \
            F.cross_entropy(predicted, batch.action.reshape(-1).long())  # ML-Agents': a Discrete action's CE
        loss = self.loss_multiplier * (self.beta * forward + (1 - self.beta) * inverse)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.updated.fill_(1.0)
        return {'forward_loss': forward.detach(), 'inverse_loss': inverse.detach()}
