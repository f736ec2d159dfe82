"""Exploration schedules."""
from __future__ import annotations

import math
from typing import Callable


def epsilon_greedy(start: float, end: float, decay: int, type: str = 'exp') -> Callable[[int], float]:  # noqa: A002
    """``eps(step)``: ``'exp'`` = end + (start - end) * exp(-step / decay); ``'linear'`` reaches ``end`` at decay."""
    if type not in ('exp', 'linear'):
        raise ValueError(f"eps schedule type must be 'exp' or 'linear', got {type!r}")
    if decay <= 0:
        raise ValueError(f"eps decay must be positive (env steps), got {decay}")
    if type == 'exp':
        return lambda step: end + (start - end) * math.exp(-step / decay)
    return lambda step: max(end, start - (start - end) * step / decay)


def get_epsilon_greedy_fn(start: float, end: float, decay: int, type_: str = 'exp') -> Callable[[int], float]:
    """DI-engine's name and signature for ``epsilon_greedy``."""
    return epsilon_greedy(start, end, decay, type_)
