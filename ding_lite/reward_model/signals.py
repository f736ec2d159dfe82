"""``policy.reward_signals``: the env's reward and the reward models', each with its own strength and gamma."""
from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor

from ..registry import REWARD_MODEL_REGISTRY
from ..rl_utils import load_optimizer
from ..rl_utils.reward_heads import RewardHeads
from ..utils.default_config import ConfigError

EXTRINSIC = dict(strength=1.0, gamma=0.99)  # the env's own reward, ML-Agents' 'extrinsic'


def signal_config(name: str, cfg: dict | None) -> dict[str, Any]:
    """One signal's settings over its defaults (``extrinsic``'s, or the registered reward model ``name``'s); a
    ``ConfigError`` naming an unknown signal or key."""
    if name == 'extrinsic':
        defaults = dict(EXTRINSIC)
    elif name in REWARD_MODEL_REGISTRY:
        defaults = dict(REWARD_MODEL_REGISTRY.get(name).default_config())
    else:
        raise ConfigError(f"policy.reward_signals.{name}: no such reward signal; 'extrinsic' (the env's reward) or a "
                          f"registered reward model: {', '.join(REWARD_MODEL_REGISTRY.keys())}")
    unknown = sorted(set(cfg or {}) - set(defaults))
    if unknown:
        raise ConfigError(f"policy.reward_signals.{name} has no key {', '.join(map(repr, unknown))}; its keys: "
                          f"{', '.join(sorted(defaults))}")
    settings = {**defaults, **(cfg or {})}
    if name != 'extrinsic':
        REWARD_MODEL_REGISTRY.get(name).check_config(settings)
    return settings


class RewardSignals(RewardHeads):
    """The signals in config order: ``rewards(batch) -> [B, K]`` (each signal's reward times its strength, the
    extrinsic one the batch's own), ``gamma`` and ``use_done`` ``[K]``, weights 1/K (the actor maximises the mean
    of their values, ML-Agents'), and a training step of every reward model on a batch. Its state (models and their
    optimizers) goes into the policy's learn state."""

    stat_prefix = 'reward_signal'
    trains = True

    def __init__(self, cfg: dict, obs_size: int, action_size: int, device: torch.device) -> None:
        names = list(cfg)
        settings = {name: signal_config(name, cfg[name]) for name in names}
        self.models = {name: REWARD_MODEL_REGISTRY.build(name, settings[name], obs_size, action_size).to(device)
                       for name in names if name != 'extrinsic'}
        use_done = [0.0 if name in self.models and self.models[name].ignore_done else 1.0 for name in names]
        super().__init__(names, [settings[name]['gamma'] for name in names], use_done, [1 / len(names)] * len(names),
                         device)
        self.strength = torch.tensor([settings[name]['strength'] for name in names], dtype=self.gamma.dtype,
                                     device=device)

    def rewards(self, batch: Any) -> Tensor:
        """``[B, K]``: every signal's reward for the batch, times its strength."""
        columns = [batch.reward if name == 'extrinsic' else self.models[name].reward(batch) for name in self.names]
        return torch.stack(columns, -1) * self.strength

    def train_step(self, batch: Any) -> dict[str, Tensor]:
        """One step of every reward model on ``batch``: ``{'reward_signal/<name>/loss': ...}``."""
        stats = {}
        for name, model in self.models.items():
            stats.update({f'reward_signal/{name}/{k}': v for k, v in model.train_step(batch).items()})
        return stats

    def stat_names(self) -> list[str]:
        return [f'{self.stat_prefix}/{name}/{key}' for name in self.names
                for key in ('reward', 'value', *(self.models[name].stat_keys if name in self.models else ()))]

    def learn_state(self) -> dict[str, Any]:
        return {'reward_signals': self.state_dict()}

    def load_learn_state(self, state: dict[str, Any]) -> None:
        self.load_state_dict(state['reward_signals'])

    def state_dict(self) -> dict[str, Any]:
        return {name: {'model': model.state_dict(), 'optimizer': copy.deepcopy(model.optimizer.state_dict())}
                for name, model in self.models.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, model in self.models.items():
            model.load_state_dict(state[name]['model'])
            load_optimizer(model.optimizer, state[name]['optimizer'])
