"""Env steps, wall time and peak memory to reach -250 on Pendulum: ding_lite's config vs a bare loop.

Run: ``python -m tests.benchmark.bench_pendulum [--seeds 0 1 2] [--set policy.collect.overlap=True]``. Every run is
a fresh subprocess (so peak RSS is its own); framework and bare runs alternate per seed. Prints each run and the
medians' ratios. ``--set`` changes the framework's config as the CLI's does.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from ding_lite.config import parse_overrides
from tests.benchmark.bare_sac import steps_to_threshold

STOP, MAX_ENV_STEP = -250.0, 100_000


def _framework(seed: int, overrides: list[str]) -> dict[str, float]:
    from ding_lite.config import read_config
    from entry import serial_pipeline
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main, create = read_config(os.path.join(root, 'dizoo_configs', 'pendulum_sac_config.py'))
    with tempfile.TemporaryDirectory() as tmp:
        main.exp_name = os.path.join(tmp, 'exp')
        start = time.perf_counter()
        serial_pipeline((main, create), seed=seed, max_env_step=MAX_ENV_STEP, overrides=parse_overrides(overrides))
        wall = time.perf_counter() - start
        rows = list(csv.DictReader(open(os.path.join(tmp, 'exp', 'log', 'evaluator.csv'))))
    reached = [int(r['envstep']) for r in rows if float(r['return_mean']) >= STOP]
    return {'env_steps': reached[0] if reached else float('nan'), 'wall_s': wall}


def _bare(seed: int, overrides: list[str]) -> dict[str, float]:
    from tests.benchmark.bare_sac import train_pendulum
    return train_pendulum(seed, STOP, MAX_ENV_STEP)


def _child(kind: str, seed: int, overrides: list[str]) -> None:
    result = (_framework if kind == 'framework' else _bare)(seed, overrides)
    result['peak_rss_gb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    print(json.dumps(result))


def _run(kind: str, seed: int, overrides: list[str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, '-W', 'ignore', '-m', 'tests.benchmark.bench_pendulum', '--child', kind,
                          '--seed', str(seed), *[f'--set={o}' for o in overrides]],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(seeds: list[int], overrides: list[str] = ()) -> dict[str, float]:
    results: dict[str, list[dict[str, float]]] = {'framework': [], 'bare': []}
    for seed in seeds:
        for kind in ('framework', 'bare'):
            result = _run(kind, seed, list(overrides))
            results[kind].append(result)
            print(f"{kind:9s} seed {seed}: {result['env_steps']} env steps, {result['wall_s']:.1f} s, "
                  f"{result['peak_rss_gb']:.2f} GB peak RSS", flush=True)
    medians = {kind: {k: statistics.median(r[k] for r in runs) for k in ('wall_s', 'peak_rss_gb')}
               for kind, runs in results.items()}
    for kind, runs in results.items():  # a run that never reached STOP counts at the budget, and is reported
        medians[kind]['env_steps'], missed = steps_to_threshold([r['env_steps'] for r in runs], MAX_ENV_STEP)
        if missed:
            print(f"{kind}: {missed} of {len(runs)} runs did not reach {STOP} in {MAX_ENV_STEP} env steps")
    ratios = {k: medians['framework'][k] / medians['bare'][k] for k in ('env_steps', 'wall_s', 'peak_rss_gb')}
    for kind, median in medians.items():
        print(f"median {kind:9s}: {median['env_steps']:.0f} env steps, {median['wall_s']:.1f} s, "
              f"{median['peak_rss_gb']:.2f} GB")
    print('ratio framework/bare: ' + ', '.join(f"{k} {v:.2f}" for k, v in ratios.items()))
    return ratios


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--child', choices=['framework', 'bare'])
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--set', action='append', default=[], metavar='KEY=VALUE')
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.seed, args.set)
    else:
        run(args.seeds, args.set)
