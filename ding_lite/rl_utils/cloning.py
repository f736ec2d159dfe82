"""Behavioural cloning beside RL (ML-Agents' ``behavioral_cloning``): the actor pulled towards demonstrated actions,
with a weight that decays to 0."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from ..data.demo import load_demo
from ..utils.default_config import ConfigError
from .entropy import tanh_gaussian_sample

BC_DEFAULTS = dict(demo_path=None, strength=1.0, steps=0, batch_size=None)


class BehaviouralCloning:
    """``loss(actor) -> (weight * bc_loss, bc_loss)`` on a batch drawn from ``demo_path``: for Box actions the squared
    error of the actor's sampled action (tanh-squashed, as the demonstrations store it) against the expert's, for
    Discrete ones the expert action's negative log-likelihood (ML-Agents' two losses). The weight is ``strength``,
    falling linearly to 0 over ``steps`` learn steps (0: constant)."""

    def __init__(self, cfg: dict, obs_size: int, discrete: bool, batch_size: int, device: torch.device) -> None:
        unknown = sorted(set(cfg) - set(BC_DEFAULTS))
        cfg = {**BC_DEFAULTS, **cfg}
        if unknown or not cfg['demo_path']:
            raise ConfigError(f"policy.behavioral_cloning={cfg!r}: its keys are {', '.join(BC_DEFAULTS)}, and "
                              f"demo_path (a file of ding_lite -m collect_demo) is required")
        batch, _ = load_demo(cfg['demo_path'], obs_shape=obs_size, discrete=discrete)
        self.obs = batch.obs.to(device).float()
        self.action = batch.action.to(device).reshape(len(self.obs), -1)
        self.action = self.action[:, 0].long() if discrete else self.action.float()
        self.strength, self.steps = float(cfg['strength']), int(cfg['steps'])
        self.batch_size, self.discrete = int(cfg['batch_size'] or batch_size), discrete

    def weight(self, step: int) -> float:
        """The loss's weight at learn step ``step``."""
        if self.steps <= 0:
            return self.strength
        return self.strength * max(0.0, 1.0 - step / self.steps)

    def loss(self, actor: Callable[[Tensor], Any], step: int) -> tuple[Tensor, Tensor]:
        rows = torch.randint(len(self.obs), (self.batch_size,), device=self.obs.device)
        obs, expert = self.obs[rows], self.action[rows]
        if self.discrete:
            bc = F.cross_entropy(actor(obs), expert)
        else:
            bc = F.mse_loss(tanh_gaussian_sample(*actor(obs))[0], expert)
        return self.weight(step) * bc, bc.detach()
