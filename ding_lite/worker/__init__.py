"""Learner (+hooks), collectors, evaluator and loggers; ``create_buffer`` where DI-engine has it."""
from __future__ import annotations

from ..data.buffer import create_buffer
from .collector import SampleSerialCollector, create_serial_collector
from .episode_collector import EpisodeSerialCollector
from .evaluator import InteractionSerialEvaluator
from .finite_check import NonFiniteEnvError
from .learner import BaseLearner, NonFiniteError, create_learner, load_checkpoint
from .learner_hook import LearnerHook, add_learner_hook

__all__ = ['BaseLearner', 'SampleSerialCollector', 'EpisodeSerialCollector', 'InteractionSerialEvaluator',
           'create_serial_collector', 'create_learner', 'create_buffer', 'LearnerHook', 'add_learner_hook',
           'load_checkpoint', 'NonFiniteError', 'NonFiniteEnvError']
