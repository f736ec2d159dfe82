"""Reward models: rewards for a sampled batch beside the env's (``policy.reward_signals``), each trained on its own
schedule and kept in every checkpoint."""
from __future__ import annotations

from .base import RewardModel
from .curiosity import CuriosityRewardModel
from .gail import GAILRewardModel
from .rnd import RNDRewardModel
from .signals import RewardSignals

__all__ = ['RewardModel', 'RNDRewardModel', 'CuriosityRewardModel', 'GAILRewardModel', 'RewardSignals']
