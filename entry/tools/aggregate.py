"""Aggregate metrics over seeds with stratified bootstrap confidence intervals (rliable's method: Agarwal et al.,
"Deep RL at the Edge of the Statistical Precipice", 2021), in numpy: the interquartile mean, mean, median and
optimality gap of scores ``[runs, tasks]``, performance profiles, and a percentile interval from resampling runs
within each task."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

Stat = Callable[[np.ndarray], np.ndarray]  # scores [..., n] -> the aggregate over the last axis


def iqm(scores: np.ndarray) -> np.ndarray:
    """The interquartile mean over the last axis: the mean of the middle half (a quarter cut off each end, as
    ``scipy.stats.trim_mean(scores, 0.25)``)."""
    flat = np.sort(np.asarray(scores, dtype=np.float64), axis=-1)
    cut = int(0.25 * flat.shape[-1])
    return flat[..., cut:flat.shape[-1] - cut].mean(-1)


def optimality_gap(scores: np.ndarray, gamma: float) -> np.ndarray:
    """How far the scores fall short of ``gamma`` on average, a score above it counting as ``gamma``."""
    return gamma - np.minimum(np.asarray(scores, dtype=np.float64), gamma).mean(-1)


def statistic(name: str, gamma: float | None = None) -> Stat:
    """The aggregate ``name`` over the last axis: 'iqm', 'mean', 'median' or 'optimality_gap' (which needs
    ``gamma``)."""
    if name == 'optimality_gap':
        if gamma is None:
            raise ValueError("the optimality gap needs the score to reach (--gamma, e.g. the env's stop value)")
        return lambda scores: optimality_gap(scores, gamma)
    stats = {'iqm': iqm, 'mean': lambda s: np.mean(s, -1), 'median': lambda s: np.median(s, -1)}
    if name not in stats:
        raise ValueError(f"unknown aggregate {name!r}; expected iqm, mean, median or optimality_gap")
    return stats[name]


def profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """A performance profile: at each threshold ``tau`` the fraction of scores (the last axis) above it."""
    return (np.asarray(scores, dtype=np.float64)[..., None] > np.asarray(taus, dtype=np.float64)).mean(-2)


def interval(scores: np.ndarray, stat: Stat, reps: int = 5000, confidence: float = 0.95,
             seed: int = 0) -> tuple[Any, Any, Any]:
    """``(point, low, high)``: ``stat`` of all ``scores [runs, tasks]`` and its stratified bootstrap percentile
    interval (each of ``reps`` replicates draws, for every task, as many runs as it has, with replacement); floats,
    or arrays where ``stat`` gives several values (a profile's, one per threshold)."""
    scores = np.asarray(scores, dtype=np.float64)
    scores = scores[:, None] if scores.ndim == 1 else scores
    runs, tasks = scores.shape
    picks = np.random.default_rng(seed).integers(0, runs, size=(reps, runs, tasks))
    replicates = stat(scores[picks, np.arange(tasks)].reshape(reps, runs * tasks))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail], axis=0)
    point = stat(scores.reshape(-1))
    return (float(point), float(low), float(high)) if np.ndim(point) == 0 else (point, low, high)


__all__ = ['iqm', 'optimality_gap', 'statistic', 'profile', 'interval']
