"""Learner, collectors, evaluator and loggers."""
from __future__ import annotations

from .collector import EpisodeSerialCollector, SampleSerialCollector, create_serial_collector
from .evaluator import InteractionSerialEvaluator
from .learner import BaseLearner, load_checkpoint

__all__ = ['BaseLearner', 'SampleSerialCollector', 'EpisodeSerialCollector', 'InteractionSerialEvaluator',
           'create_serial_collector', 'load_checkpoint']
