"""Does mixing an expert's transitions into every batch (RLPD-style ``offline_buffer``) speed up Pendulum SAC?

Run: ``python -m tests.benchmark.bench_hybrid [--seeds 0 1 2] [--update-per-collect 10] [--demo FILE]``.
Without ``--demo``, trains the zoo config's seed-0 expert and records 10k deterministic demonstrations first.
Plain and hybrid (``ratio`` 0.5, real rewards) runs alternate per seed, each for ``--horizon`` env steps; reports
env steps to -250 and the mean evaluation return over the run (area under the curve), with medians and a ratio. The learning
benefit is a measurement over seeds here, not a unit test: one seed's curve moves between CPUs.
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import tempfile

from ding_lite.config import read_config
from entry import collect_demo_data, serial_pipeline
from tests.benchmark.bare_sac import steps_to_threshold

STOP = -250.0
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _config(exp_name: str, update_per_collect: int) -> tuple:
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', 'pendulum_sac_config.py'))
    main.exp_name = exp_name
    main.env.stop_value = float('inf')  # run to the horizon: the curve's area is compared over equal spans
    main.policy.learn.update_per_collect = update_per_collect
    return main, create


def _expert_demo(tmp: str) -> str:
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', 'pendulum_sac_config.py'))
    main.exp_name = os.path.join(tmp, 'expert')
    serial_pipeline((main, create), seed=0, max_env_step=60_000)
    demo = os.path.join(tmp, 'demo.pt')
    collect_demo_data((main, create), seed=0, collect_count=10_000, expert_data_path=demo,
                      state_dict_path=os.path.join(tmp, 'expert', 'ckpt', 'ckpt_best.pth.tar'))
    return demo


def _run(seed: int, demo: str | None, args: argparse.Namespace, tmp: str) -> dict[str, float]:
    name = os.path.join(tmp, f"{'hybrid' if demo else 'plain'}_{seed}")
    main, create = _config(name, args.update_per_collect)
    if demo:
        main.policy.other.offline_buffer = dict(path=demo, ratio=0.5)
    serial_pipeline((main, create), seed=seed, max_env_step=args.horizon)
    rows = list(csv.DictReader(open(os.path.join(name, 'log', 'evaluator.csv'))))
    reached = [int(r['envstep']) for r in rows if float(r['return_mean']) >= STOP]
    return {'env_steps': reached[0] if reached else float('nan'),
            'mean_return': statistics.mean(float(r['return_mean']) for r in rows)}


def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        demo = args.demo or _expert_demo(tmp)
        results: dict[str, list[dict[str, float]]] = {'plain': [], 'hybrid': []}
        for seed in args.seeds:
            for kind in ('plain', 'hybrid'):
                result = _run(seed, demo if kind == 'hybrid' else None, args, tmp)
                results[kind].append(result)
                print(f"{kind:6s} seed {seed}: -250 at {result['env_steps']} env steps, mean eval return "
                      f"{result['mean_return']:.0f} up to {args.horizon}", flush=True)
    medians = {kind: {'mean_return': statistics.median(r['mean_return'] for r in runs)}
               for kind, runs in results.items()}
    for kind, runs in results.items():  # a run that never reached STOP counts at the horizon, and is reported
        medians[kind]['env_steps'], missed = steps_to_threshold([r['env_steps'] for r in runs], args.horizon)
        if missed:
            print(f"{kind}: {missed} of {len(runs)} runs did not reach {STOP} in {args.horizon} env steps")
    for kind, median in medians.items():
        print(f"median {kind:6s}: {median['env_steps']:.0f} env steps, mean eval return {median['mean_return']:.0f}")
    print(f"ratio hybrid/plain env steps: {medians['hybrid']['env_steps'] / medians['plain']['env_steps']:.2f}")


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--update-per-collect', type=int, default=10, help='learner steps per 10 env steps')
    parser.add_argument('--horizon', type=int, default=8_000, help='env steps per run')
    parser.add_argument('--demo', default=None, help='a demonstration file (skips training the expert)')
    main(parser.parse_args())
