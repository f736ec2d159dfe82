"""Text logs, tensorboard and the terminal progress bar, fed from one dict of scalars."""
from __future__ import annotations

import logging
import os
import sys
from typing import Any

import numpy as np
from tensorboardX import SummaryWriter

from ..utils.checkpoint import signals_deferred
from .episode_metrics import mean_metrics


def build_logger(exp_name: str | None, name: str, console: bool = False) -> logging.Logger:
    """A logger writing ``<exp_name>/log/<name>.txt`` (and the console when asked); ``exp_name`` None writes
    nowhere (a Ray actor's worker, whose driver logs what it reports)."""
    if exp_name is None:
        logger = logging.getLogger(f'ding_lite.unlogged.{name}')
        logger.propagate = False
        return logger
    logger = logging.getLogger(f'ding_lite.{os.path.abspath(exp_name)}.{name}')
    if not logger.handlers:
        os.makedirs(os.path.join(exp_name, 'log'), exist_ok=True)
        handler = logging.FileHandler(os.path.join(exp_name, 'log', f'{name}.txt'))
        handler.setFormatter(logging.Formatter('[%(asctime)s] %(message)s', '%Y-%m-%d %H:%M:%S'))
        logger.addHandler(handler)
        if console:
            logger.addHandler(logging.StreamHandler(sys.stdout))
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


class _Writer(SummaryWriter):
    """tensorboardX's writer, its histograms and its close with Ctrl-C held until done (its scalars: ``write_scalars``):
    a KeyboardInterrupt inside them can leave its queue's lock held, and the process's exit (which closes it again)
    then waits for ever."""

    def add_histogram(self, *args: Any, **kwargs: Any) -> None:
        with signals_deferred():
            super().add_histogram(*args, **kwargs)

    def close(self) -> None:
        with signals_deferred():
            super().close()


def build_tb_logger(exp_name: str, pipeline: str = 'serial', tracker: Any = None) -> SummaryWriter:
    """The run's tensorboard writer; ``tracker`` (a Weights & Biases run, or None) receives the same scalars."""
    writer = _Writer(os.path.join(exp_name, 'log', pipeline))
    writer.tracker = tracker
    return writer


def format_scalars(prefix: str, scalars: dict[str, Any]) -> str:
    return f"{prefix} " + ' | '.join(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}"
                                     for k, v in scalars.items())


def write_scalars(tb_logger: SummaryWriter | None, prefix: str, scalars: dict[str, float], step: int) -> None:
    """Write ``scalars`` to tensorboard (and the tracker) with Ctrl-C held until done (``signals_deferred``)."""
    if tb_logger is None:
        return
    with signals_deferred():
        for key, value in scalars.items():
            tb_logger.add_scalar(f'{prefix}/{key}', value, step)
        tracker = getattr(tb_logger, 'tracker', None)
        if tracker is not None:  # the same scalars, with the step tensorboard files them under
            tracker.log({**{f'{prefix}/{key}': value for key, value in scalars.items()}, f'{prefix}/step': step})


def log_episodes(tb_logger: Any, logger: Any, episodes: list[dict[str, float]], train_iter: int, envstep: int,
                 env_restarts: int, entropy: float | None = None, nonfinite_dropped: int = 0,
                 info_stats: dict[str, float] | None = None) -> None:
    """Write the collector's statistics of ``episodes`` (``{'return', 'length', <info metrics>}`` each), the
    collecting policy's ``entropy``, the transitions dropped for a NaN/inf and the envs' ``info_stats`` to
    tensorboard and the log."""
    returns = [e['return'] for e in episodes]
    stats = {'episode_return_mean': float(np.mean(returns)), 'episode_return_std': float(np.std(returns)),
             'episode_length_mean': float(np.mean([e['length'] for e in episodes])),
             'episode_count': float(len(returns)), 'envstep_count': float(envstep),
             'env_restart_count': float(env_restarts), 'nonfinite_dropped_count': float(nonfinite_dropped),
             **mean_metrics(episodes), **(info_stats or {})}
    if entropy is not None:
        stats['entropy'] = entropy
    write_scalars(tb_logger, 'collector', stats, envstep)
    logger.info(format_scalars(f"iter {train_iter} envstep {envstep}", stats))
