"""Random Network Distillation (arXiv:1810.12894): the reward is how badly a trained predictor matches a fixed random
network on the next observation, high where the agent has rarely been. As the paper, both read the observation
normalised by running statistics and clipped to [-5, 5]: a dimension of small scale (MountainCar's velocity) counts
as much as any other."""
from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from ..model.obs_norm import RunningObsNorm
from ..registry import REWARD_MODEL_REGISTRY
from ..rl_utils import make_adam
from .base import RewardModel


def _net(obs_size: int, encoding_size: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(obs_size, encoding_size), nn.ReLU(), nn.Linear(encoding_size, encoding_size),
                         nn.ReLU(), nn.Linear(encoding_size, encoding_size))


@REWARD_MODEL_REGISTRY.register('rnd')
class RNDRewardModel(RewardModel):
    """ML-Agents' RND: ``reward = sum((predictor(s') - target(s'))**2)`` over the encoding of the normalised ``s'``;
    the target is never trained; the predictor's loss is the batch mean of the reward, and each training batch
    updates the normalisation."""

    ignore_done: ClassVar[bool] = True
    config = dict(
        strength=0.01,         # ML-Agents' default for RND
        gamma=0.99,
        learning_rate=1e-4,    # the predictor's Adam
        encoding_size=64,      # width of both nets and of their output
    )

    def __init__(self, cfg: dict, obs_size: int, action_size: int) -> None:
        super().__init__(cfg, obs_size, action_size)
        self.predictor = _net(obs_size, self.cfg.encoding_size)
        self.target = _net(obs_size, self.cfg.encoding_size).requires_grad_(False)
        self.obs_norm = RunningObsNorm(obs_size, clip=5.0)
        self.register_buffer('error_scale', torch.ones(()))  # 1 / the recent errors' RMS: the reward in its units
        self.optimizer = make_adam(self.predictor.parameters(), self.cfg.learning_rate, (0.9, 0.999))

    def _error(self, batch: Any) -> Tensor:
        obs = self.obs_norm(batch.next_obs.flatten(1).float())
        return (self.predictor(obs) - self.target(obs)).pow(2).sum(-1)

    @torch.no_grad()
    def reward(self, batch: Any) -> Tensor:
        return self._error(batch) * self.error_scale

    def train_step(self, batch: Any) -> dict[str, Tensor]:
        self.obs_norm.update(batch.next_obs.flatten(1))
        error = self._error(batch)
        with torch.no_grad():  # an exponential average of the squared error over the last ~100 updates
            mean_square = self.error_scale.pow(-2).lerp(error.pow(2).mean(), 0.01)
            self.error_scale.copy_(mean_square.rsqrt())
        loss = error.mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {'loss': loss.detach()}
