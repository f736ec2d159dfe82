"""Models and model wrappers."""
from __future__ import annotations

from .obs_norm import RunningObsNorm, RunningRewardNorm
from .qac import ContinuousQAC, DiscreteQAC
from .ma_qac import ContinuousMAQAC, DiscreteMAQAC
from .simba import SimbaQAC
from .simba_v2 import SimbaV2QAC
from .wrappers import ModelWrapper, NoValidActionError, model_wrap, register_wrapper

__all__ = ['ContinuousQAC', 'DiscreteQAC', 'ContinuousMAQAC', 'DiscreteMAQAC', 'ModelWrapper', 'NoValidActionError',
           'RunningObsNorm', 'RunningRewardNorm', 'SimbaQAC', 'SimbaV2QAC', 'model_wrap', 'register_wrapper']
