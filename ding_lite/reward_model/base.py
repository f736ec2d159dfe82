"""The reward model contract: a reward per transition of a batch, and a step of its own training."""
from __future__ import annotations

from typing import Any, ClassVar

import torch
from easydict import EasyDict
import torch.nn.functional as F
from torch import Tensor, nn

from ..utils.default_config import class_default_config


class RewardModel(nn.Module):
    """A registered reward model (``@REWARD_MODEL_REGISTRY.register(name)``): ``reward(batch) -> [B]`` for a learn
    batch (``obs``, ``action``, ``next_obs``, ``done``), without gradient, and ``train_step(batch) -> {stat: 0-d
    tensor}``, one step of its own optimizer. Its ``state_dict`` holds its nets; ``optimizer`` is saved beside it.
    ``ignore_done``: its value bootstraps through episode ends (ML-Agents' curiosity and RND)."""

    ignore_done: ClassVar[bool] = False
    stat_keys: ClassVar[tuple[str, ...]] = ('loss',)  # what train_step returns, logged as reward_signal/<name>/<key>
    config = dict(
        strength=1.0,          # the reward's weight in the sum the actor maximises
        gamma=0.99,            # its value's discount
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    def __init__(self, cfg: dict, obs_size: int, action_size: int) -> None:
        super().__init__()
        self.cfg = EasyDict(cfg)
        self.obs_size, self.action_size = obs_size, action_size
        self.optimizer: torch.optim.Optimizer | None = None  # set by the subclass once its nets exist

    @classmethod
    def check_config(cls, cfg: dict) -> None:
        """A ``ConfigError`` for settings this model cannot work with, at compile time (before anything runs)."""

    def action_input(self, action: Tensor) -> Tensor:
        """``[B, action_size]``: a Box action as it is, a Discrete one (an integer index) one-hot."""
        if action.is_floating_point():
            return action.reshape(len(action), -1).float()
        return F.one_hot(action.reshape(-1).long(), self.action_size).float()

    def reward(self, batch: Any) -> Tensor:
        raise NotImplementedError

    def train_step(self, batch: Any) -> dict[str, Tensor]:
        raise NotImplementedError
