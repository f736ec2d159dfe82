"""Offline learning from the hand-made Pendulum controller's transitions: SAC against CQL (and any policy type), per
seed, the best and last evaluation and the wall time.

Run: ``python -m tests.benchmark.bench_offline [--policies sac cql] [--seeds 0 1 2] [--iterations 3000]
[--explore 0.3] [--noise 0.2] [--data FILE] [--set KEY=VALUE ...]``. The data is 10k transitions of
``pendulum_expert_demo`` (``--explore 0 --noise 0``: the controller's deterministic actions alone), or ``--data``: a
file of your own (a run's ``ckpt/ckpt_last.buffer.pth.tar``, say); the config is the zoo Pendulum SAC's with its
policy type swapped; evaluations every 500 learn steps. One JSON line per run: BENCHMARKS.md's "CQL" rows.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time

from ding_lite.config import apply_overrides, parse_overrides
from entry import serial_pipeline_offline
from tests.conftest import pendulum_expert_demo, zoo_config


def run(policy: str, seed: int, iterations: int, demo: str, folder: str, overrides: dict) -> dict:
    main, create = zoo_config('pendulum_sac_config', os.path.join(folder, f'{policy}_{seed}'))
    main.policy.learn.data_path = demo
    main.policy.eval.evaluator.eval_freq = 500
    main.env.stop_value = 0
    create.policy.type = policy
    main, create = apply_overrides(main, create, overrides)
    start = time.perf_counter()
    serial_pipeline_offline((main, create), seed=seed, max_train_iter=iterations)
    rows = [float(r['return_mean']) for r in csv.DictReader(open(os.path.join(main.exp_name, 'log',
                                                                                 'evaluator.csv')))]
    return {'policy': policy, 'seed': seed, 'iterations': iterations, 'best': round(max(rows)),
            'last': round(rows[-1]), 'wall_s': round(time.perf_counter() - start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--policies', nargs='+', default=['sac', 'cql'])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--iterations', type=int, default=3000)
    parser.add_argument('--explore', type=float, default=0.3, help='share of uniformly random actions in the data')
    parser.add_argument('--noise', type=float, default=0.2, help="std of the noise on the controller's actions")
    parser.add_argument('--data', help="a data file to learn from instead of the controller's transitions")
    parser.add_argument('--set', action='append', default=[], metavar='KEY=VALUE', help='a config override')
    args = parser.parse_args()
    overrides = parse_overrides(args.set)
    with tempfile.TemporaryDirectory() as folder:
        demo = args.data or pendulum_expert_demo(os.path.join(folder, 'demo.pth'), 10000, explore=args.explore,
                                                 noise=args.noise)
        for policy in args.policies:
            for seed in args.seeds:
                print(json.dumps(run(policy, seed, args.iterations, demo, folder, overrides)), flush=True)


if __name__ == '__main__':
    main()
