"""Learning curves from runs' ``evaluator.csv``: the mean over seeds with a band, one line per experiment."""
from __future__ import annotations

import csv
import os
import re
from typing import Any

import numpy as np

from .aggregate import Stat, interval, profile, statistic

X_COLUMNS = ('envstep', 'wall_time', 'train_iter')
# a run folder's name without its seed (DI-engine's _seed<K>) and the time suffix a name clash adds
_SEED_SUFFIX = re.compile(r'_seed\d+(_\d{6}_\d{6}_[0-9a-f]{4})?$')


def experiment_name(run_dir: str) -> str:
    """``pendulum_sac_seed3`` (or ``pendulum_sac_seed3_<time>``) -> ``pendulum_sac``; other names as they are."""
    name = os.path.basename(os.path.normpath(run_dir))
    return _SEED_SUFFIX.sub('', name)


def read_curve(run_dir: str, x: str = 'envstep', y: str = 'return_mean') -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of a run's evaluations that have a ``y`` value, in order; a clear error when there are none."""
    if x not in X_COLUMNS:
        raise ValueError(f"x must be one of {', '.join(X_COLUMNS)}, got {x!r}")
    path = os.path.join(run_dir, 'log', 'evaluator.csv')
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{run_dir} has no evaluation log ({path} does not exist); give the folder of a "
                                f"run (its exp_name), which every evaluation appends to")
    with open(path) as f:
        reader = csv.DictReader(f)
        if y not in (reader.fieldnames or [y]):
            raise ValueError(f"{path} has no column {y!r}; its columns: {', '.join(reader.fieldnames)} (an info "
                             f"metric gets a column once an env reports it, see env.info_metrics)")
        rows = [row for row in reader if row.get(y) not in (None, '')]
    if not rows:
        raise ValueError(f"{path} holds no evaluation with a {y} value yet")
    xs, ys = np.array([float(r[x]) for r in rows]), np.array([float(r[y]) for r in rows])
    order = np.argsort(xs, kind='stable')
    return xs[order], ys[order]


def group_runs(run_dirs: list[str]) -> dict[str, list[str]]:
    """Run folders by experiment (their name without ``_seed<K>``), in the order first given."""
    groups: dict[str, list[str]] = {}
    for run_dir in run_dirs:
        groups.setdefault(experiment_name(run_dir), []).append(run_dir)
    return groups


def aggregate(curves: list[tuple[np.ndarray, np.ndarray]], band: str = 'minmax',
              stat: Stat | None = None) -> tuple[np.ndarray, ...]:
    """``(x, mean, low, high)`` over runs on the union of their x values, each run interpolated inside its own
    range (a point counts only the runs that reached it); ``band`` 'minmax' or 'std'. With ``stat`` (an aggregate of
    ``entry.tools.aggregate``) the line is that statistic and the band its stratified bootstrap 95% interval."""
    if band not in ('minmax', 'std'):
        raise ValueError(f"band must be 'minmax' or 'std', got {band!r}")
    grid = np.unique(np.concatenate([x for x, _ in curves]))
    values = np.full((len(curves), len(grid)), np.nan)
    for k, (x, y) in enumerate(curves):
        inside = (grid >= x[0]) & (grid <= x[-1])
        values[k, inside] = np.interp(grid[inside], x, y)
    if stat is not None:
        points = [interval(column[~np.isnan(column)], stat, reps=1000) for column in values.T]
        return (grid, *np.array(points).T)
    mean = np.nanmean(values, axis=0)
    if band == 'std':
        std = np.nanstd(values, axis=0)
        return grid, mean, mean - std, mean + std
    return grid, mean, np.nanmin(values, axis=0), np.nanmax(values, axis=0)


def last_scores(run_dirs: list[str], y: str = 'return_mean') -> dict[str, np.ndarray]:
    """Per experiment: each of its runs' last evaluation of ``y`` (its score)."""
    return {name: np.array([read_curve(d, 'train_iter', y)[1][-1] for d in dirs])
            for name, dirs in group_runs(run_dirs).items()}


def summary_rows(run_dirs: list[str], y: str = 'return_mean', gamma: float | None = None) -> list[dict[str, str]]:
    """Per experiment: its runs' last evaluation of ``y`` and their IQM, mean and median (with the optimality gap
    where ``gamma`` is given), each with its stratified bootstrap 95% interval."""
    names = ['iqm', 'mean', 'median'] + (['optimality_gap'] if gamma is not None else [])
    rows = []
    for name, scores in last_scores(run_dirs, y).items():
        row = {'experiment': name, 'runs': str(len(scores)), 'last': ' '.join(f"{v:.1f}" for v in scores)}
        for stat in names:
            point, low, high = interval(scores, statistic(stat, gamma))
            row[stat] = f"{point:.1f} [{low:.1f}, {high:.1f}]"
        rows.append(row)
    return rows


def plot_curves(run_dirs: list[str], output: str = 'curve.png', x: str = 'envstep', band: str = 'minmax',
                title: str | None = None, y: str = 'return_mean', aggregate_name: str | None = None,
                gamma: float | None = None) -> str:
    """Draw each experiment's mean of evaluator.csv's ``y`` (the evaluation return) over its seeds with a shaded
    band, or with ``aggregate_name`` ('iqm', 'mean', 'median', 'optimality_gap' with ``gamma``) that aggregate with
    its stratified bootstrap 95% interval; returns ``output``."""
    stat = statistic(aggregate_name, gamma) if aggregate_name else None
    fig, ax = _figure(run_dirs)
    groups = {name: [read_curve(d, x, y) for d in dirs] for name, dirs in group_runs(run_dirs).items()}
    for name, curves in groups.items():
        grid, mean, low, high = aggregate(curves, band, stat)
        line, = ax.plot(grid, mean, label=f"{name} ({len(curves)} seed{'s' * (len(curves) > 1)})")
        if len(curves) > 1:
            ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel({'envstep': 'env steps', 'wall_time': 'wall time (s)', 'train_iter': 'train iterations'}[x])
    ax.set_ylabel('evaluation return (mean over episodes)' if y == 'return_mean' else f'evaluation {y}')
    what = f"{aggregate_name} over seeds, band: 95% bootstrap interval" if stat else \
        f"mean over seeds, band: {'min-max' if band == 'minmax' else '1 std'}"
    return _save(fig, ax, title or what, output, 'lower right')


def plot_profiles(run_dirs: list[str], output: str = 'profile.png', title: str | None = None,
                  y: str = 'return_mean') -> str:
    """Draw each experiment's performance profile (rliable's): over thresholds tau, the fraction of its runs whose
    last evaluation of ``y`` is above tau, with a stratified bootstrap 95% band; returns ``output``."""
    fig, ax = _figure(run_dirs)
    scores = last_scores(run_dirs, y)
    every = np.concatenate(list(scores.values()))
    span = max(every.max() - every.min(), 1e-6)
    taus = np.linspace(every.min() - 0.05 * span, every.max() + 0.05 * span, 201)
    for name, runs in scores.items():
        point, low, high = interval(runs, lambda s: profile(s, taus), reps=1000)
        line, = ax.plot(taus, point, label=f"{name} ({len(runs)} run{'s' * (len(runs) > 1)})")
        if len(runs) > 1:
            ax.fill_between(taus, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel(f"score tau (last evaluation's {y})")
    ax.set_ylabel('fraction of runs with score > tau')
    return _save(fig, ax, title or 'performance profile, band: 95% bootstrap interval', output, 'lower left')


def _figure(run_dirs: list[str]) -> tuple[Any, Any]:
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'ding-lite[plot]'") from None
    if not run_dirs:
        raise ValueError("give at least one run folder to plot")
    return plt.subplots(figsize=(7, 4.5))


def _save(fig: Any, ax: Any, title: str, output: str, legend: str) -> str:
    import matplotlib.pyplot as plt
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc=legend)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=120)
    plt.close(fig)
    return output
