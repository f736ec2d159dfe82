"""Measure zoo configs: per seed, the best and last evaluation return, when the stop value was reached, wall time.

Run: ``python -m tests.benchmark.bench_zoo [CONFIG ...] [--env-steps N] [--seeds 0 1 2] [--out results.jsonl]
[--keep DIR]`` (CONFIG: a name in ``dizoo_configs/`` such as ``hopper_sac_config``; default: Pendulum for 40k env
steps). Each run is a fresh subprocess writing under a temporary folder; one JSON line per run goes to ``--out``
(appended) and the console. With ``--keep DIR`` each run's ``evaluator.csv`` is kept as
``DIR/<config>_seed<N>/log/evaluator.csv``, which ``ding_lite plot DIR/<config>_seed*`` draws. These are the
figures in the configs' ``Expected:`` paragraphs and docs/configs.md's zoo table and curves.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _child(config: str, seed: int, env_steps: int, keep: str | None) -> dict:
    from ding_lite.config import read_config
    from entry import serial_pipeline
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', f'{config}.py'))
    with tempfile.TemporaryDirectory() as tmp:
        main.exp_name = os.path.join(tmp, 'run')
        start = time.perf_counter()
        serial_pipeline((main, create), seed=seed, max_env_step=env_steps)
        wall = time.perf_counter() - start
        log = os.path.join(tmp, 'run', 'log', 'evaluator.csv')
        rows = list(csv.DictReader(open(log)))
        if keep:
            kept = os.path.join(keep, f"{config.removesuffix('_config')}_seed{seed}", 'log')
            os.makedirs(kept, exist_ok=True)
            shutil.copy(log, kept)
    returns = [(int(r['envstep']), float(r['return_mean'])) for r in rows]
    reached = [step for step, value in returns if value >= main.env.stop_value]
    best = max(returns, key=lambda r: r[1])
    return {'config': config, 'seed': seed, 'env_steps': env_steps, 'wall_s': round(wall, 1),
            'best_return': round(best[1], 1), 'best_at': best[0], 'last_return': round(returns[-1][1], 1),
            'stop_value': main.env.stop_value, 'reached_at': reached[0] if reached else None}


def run(configs: list[str], seeds: list[int], env_steps: int, out: str | None, keep: str | None = None) -> list[dict]:
    results = []
    for config in configs:
        for seed in seeds:
            proc = subprocess.run([sys.executable, '-W', 'ignore', '-m', 'tests.benchmark.bench_zoo', '--child',
                                   config, '--seed', str(seed), '--env-steps', str(env_steps)]
                                  + (['--keep', os.path.abspath(keep)] if keep else []), cwd=ROOT,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"{config} seed {seed} failed:\n{proc.stderr[-3000:]}")
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            results.append(result)
            print(json.dumps(result), flush=True)
            if out:
                with open(out, 'a') as f:
                    f.write(json.dumps(result) + '\n')
    return results


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('configs', nargs='*', default=['pendulum_sac_config'])
    parser.add_argument('--child', default=None)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0])
    parser.add_argument('--env-steps', type=int, default=40_000)
    parser.add_argument('--out', default=None)
    parser.add_argument('--keep', default=None, help="folder to keep each run's evaluator.csv in")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.seed, args.env_steps, args.keep)))
    else:
        run(args.configs, args.seeds, args.env_steps, args.out, args.keep)
