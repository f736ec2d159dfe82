"""GAIL (arXiv:1606.03476) as ML-Agents trains it: a discriminator tells demonstrations from the policy's
transitions; the reward is high where it mistakes the policy for the expert. VAIL (arXiv:1810.00821) optional."""
from __future__ import annotations

import os
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from ..data.demo import load_demo
from ..registry import REWARD_MODEL_REGISTRY
from ..rl_utils import make_adam
from ..utils.default_config import ConfigError
from ..model.heads import mlp
from .base import RewardModel

EPSILON = 1e-7


@REWARD_MODEL_REGISTRY.register('gail')
class GAILRewardModel(RewardModel):
    """``reward = -log(1 - D(s[, a, done]))`` >= 0; the discriminator's loss is the binary cross-entropy of expert
    against policy batches (an expert batch of the same size drawn from ``demo_path``, a file of
    ``collect_demo_data``), plus ML-Agents' gradient penalty (10) and, with ``use_vail``, its information
    bottleneck (z of 128, I_c 0.5, beta stepped by 5e-4)."""

    stat_keys: ClassVar[tuple[str, ...]] = ('loss', 'policy_estimate', 'expert_estimate')
    gradient_penalty_weight, z_size, beta_step, mutual_information = 10.0, 128, 5e-4, 0.5
    config = dict(
        strength=1.0,
        gamma=0.99,
        learning_rate=3e-4,    # the discriminator's Adam
        encoding_size=64,      # width of its encoder
        demo_path=None,        # demonstrations (collect_demo_data's file); required
        use_actions=False,     # the discriminator reads the action and done too, not the observation alone
        use_vail=False,        # a variational bottleneck in front of the estimate
    )

    @classmethod
    def check_config(cls, cfg: dict) -> None:
        path = cfg.get('demo_path')
        if not path or not os.path.isfile(path):
            why = 'none given' if not path else 'no such file'
            raise ConfigError(f"policy.reward_signals.gail.demo_path={path!r}: GAIL needs a demonstration file (one "
                              f"written by ding_lite -m collect_demo); {why}")

    def __init__(self, cfg: dict, obs_size: int, action_size: int) -> None:
        super().__init__(cfg, obs_size, action_size)
        self.check_config(self.cfg)
        demo, _ = load_demo(self.cfg.demo_path, obs_shape=obs_size)
        for name in ('obs', 'action', 'done'):  # moved with the model, not saved in its checkpoints
            value = demo[name] if name == 'action' and not demo[name].is_floating_point() else \
                demo[name].reshape(len(demo.obs), -1).float()
            self.register_buffer(f'demo_{name}', value, persistent=False)
        size = self.cfg.encoding_size
        self.encoder = mlp(obs_size + (action_size + 1 if self.cfg.use_actions else 0), size, 1, 'silu')
        if self.cfg.use_vail:
            self.z_mu = nn.Linear(size, self.z_size)
            self.z_sigma = nn.Parameter(torch.ones(self.z_size))
            self.register_buffer('beta', torch.zeros(()))
        self.estimator = nn.Sequential(nn.Linear(self.z_size if self.cfg.use_vail else size, 1), nn.Sigmoid())
        self.optimizer = make_adam(self.parameters(), self.cfg.learning_rate)

    def _inputs(self, obs: Tensor, action: Tensor, done: Tensor) -> Tensor:
        parts = [obs.flatten(1).float()]
        if self.cfg.use_actions:
            parts += [self.action_input(action), done.reshape(-1, 1).float()]
        return torch.cat(parts, -1)

    def _estimate(self, inputs: Tensor, noise: bool) -> tuple[Tensor, Tensor | None]:
        hidden, z_mu = self.encoder(inputs), None
        if self.cfg.use_vail:
            z_mu = self.z_mu(hidden)
            hidden = z_mu + torch.randn_like(z_mu) * self.z_sigma if noise else z_mu
        return self.estimator(hidden).squeeze(-1), z_mu

    @torch.no_grad()
    def reward(self, batch: Any) -> Tensor:
        estimate = self._estimate(self._inputs(batch.obs, batch.action, batch.done), noise=False)[0]
        return -torch.log(1.0 - estimate * (1.0 - EPSILON))

    def train_step(self, batch: Any) -> dict[str, Tensor]:
        rows = torch.randint(len(self.demo_obs), (len(batch.obs),), device=self.demo_obs.device)
        expert = self._inputs(self.demo_obs[rows], self.demo_action[rows], self.demo_done[rows])
        policy = self._inputs(batch.obs, batch.action, batch.done)
        policy_estimate, policy_mu = self._estimate(policy, noise=True)
        expert_estimate, expert_mu = self._estimate(expert, noise=True)
        loss = -(torch.log(expert_estimate + EPSILON) + torch.log(1.0 - policy_estimate + EPSILON)).mean()
        stats = {'policy_estimate': policy_estimate.detach().mean(), 'expert_estimate': expert_estimate.detach().mean()}
        total = loss + self.gradient_penalty_weight * self._gradient_penalty(policy, expert)
        if self.cfg.use_vail:
            sigma2 = self.z_sigma.pow(2)
            kl = (-(1 + sigma2.log() - 0.5 * expert_mu.pow(2) - 0.5 * policy_mu.pow(2) - sigma2).sum(-1)).mean()
            total = total + self.beta * (kl - self.mutual_information)
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        self.optimizer.step()
        if self.cfg.use_vail:  # the bottleneck's multiplier follows its constraint (dual ascent, no host sync)
            self.beta.copy_((self.beta + self.beta_step * (kl.detach() - self.mutual_information)).clamp(min=0))
        return {'loss': loss.detach(), **stats}

    def _gradient_penalty(self, policy: Tensor, expert: Tensor) -> Tensor:
        """``(|grad D| - 1)^2`` at points between policy and expert inputs (arXiv:1704.00028)."""
        weight = torch.rand_like(policy)
        mixed = (weight * policy + (1 - weight) * expert).requires_grad_(True)
        estimate = self._estimate(mixed, noise=True)[0].sum()
        gradient = torch.autograd.grad(estimate, mixed, create_graph=True)[0]
        return ((gradient.pow(2).sum(-1) + EPSILON).sqrt() - 1).pow(2).mean()
