"""What an env reports in ``info`` at an episode's end, kept per episode and averaged for the logs."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

SUCCESS_KEY = 'is_success'                  # gymnasium-robotics' and SB3's key, kept whenever an env reports it
LOGGED_AS = {SUCCESS_KEY: 'success_rate'}   # SB3's name for its average


def episode_metrics(info: dict[str, Any] | None, keys: Iterable[str]) -> dict[str, float]:
    """The numeric values of ``keys`` (and ``is_success``) in an episode's last ``info``; others are skipped."""
    metrics = {}
    for key in dict.fromkeys([*keys, SUCCESS_KEY]):
        value = (info or {}).get(key)
        if isinstance(value, (bool, int, float, np.bool_, np.number)) or \
                (isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in 'biuf'):
            metrics[key] = float(np.asarray(value).reshape(()))
    return metrics


def discount_of(policy: Any) -> float:
    """The gamma of a policy mode's discounted-return metric: its ``learn.discount_factor``."""
    return float(policy.cfg.learn.discount_factor)


def return_metrics(total: float, discounted: float, length: int) -> dict[str, float]:
    """ALF's episode metrics beside the return: the discounted return and the average reward per step."""
    return {'discounted_return': float(discounted), 'reward_per_step': float(total) / max(int(length), 1)}


def mean_metrics(episodes: list[dict[str, float]]) -> dict[str, float]:
    """Per metric, the mean over the episodes that reported it (``is_success`` as ``success_rate``); the
    episodes' ``return`` and ``length`` are not metrics."""
    values: dict[str, list[float]] = {}
    for episode in episodes:
        for key, value in episode.items():
            if key not in ('return', 'length'):
                values.setdefault(LOGGED_AS.get(key, key), []).append(value)
    return {key: float(np.mean(v)) for key, v in values.items()}
