"""Env managers' stepping rate with random actions: ``base`` (in this process), ``subprocess`` (a process per env)
and ``shared_memory`` (worker processes stepping a batch of envs each), HalfCheetah-v5 by default.

Run: ``python -m tests.benchmark.bench_env_managers [--env-id HalfCheetah-v5] [--envs 2 4] [--workers 2]
[--seconds 5] [--rounds 3]``. Each manager steps its envs through ``step_batch`` (the collector's path) with uniform
random actions for ``--seconds`` in all, the managers taking turns every half second (a VM's speed drifts within
seconds); each round prints env steps/s and each manager's ratio to ``base``.
"""
from __future__ import annotations

import argparse
import time
from functools import partial
from typing import Any

import numpy as np

from envs import MujocoEnv, create_env_manager

MANAGERS = ('base', 'subprocess', 'shared_memory')


def _manager(manager_type: str, env_id: str, env_num: int, workers: int) -> Any:
    cfg = {'type': manager_type, **({'worker_num': workers} if manager_type == 'shared_memory' else {})}
    manager = create_env_manager(cfg, [partial(MujocoEnv, cfg={'env_id': env_id}) for _ in range(env_num)])
    manager.seed(0)
    manager.launch()
    return manager


def _steps(manager: Any, rng: np.random.Generator, seconds: float) -> tuple[int, float]:
    """Env steps of random actions through ``step_batch`` for ``seconds``: ``(steps, seconds taken)``."""
    low, high = manager.action_space.low, manager.action_space.high
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        ids = list(manager.ready_obs)
        step = manager.step_batch(ids, rng.uniform(low, high, (len(ids),) + low.shape).astype(np.float32))
        steps += len(step.env_id)
    return steps, time.perf_counter() - start


def rates(managers: tuple[str, ...], env_id: str, env_num: int, workers: int, seconds: float,
          chunk: float = 0.5) -> dict[str, float]:
    """Env steps/s of ``env_num`` envs under each manager type, random actions: the managers take turns every
    ``chunk`` seconds for ``seconds`` each, so that all see the machine at the same speed."""
    built = {m: _manager(m, env_id, env_num, workers) for m in managers}
    rng = np.random.default_rng(0)
    totals = {m: [0, 0.0] for m in managers}
    try:
        for manager in built.values():
            _steps(manager, rng, 0.2)  # warm up
        for _ in range(max(1, round(seconds / chunk))):
            for m, manager in built.items():
                steps, taken = _steps(manager, rng, chunk)
                totals[m][0] += steps
                totals[m][1] += taken
    finally:
        for manager in built.values():
            manager.close()
    return {m: steps / taken for m, (steps, taken) in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--env-id', default='HalfCheetah-v5')
    parser.add_argument('--envs', type=int, nargs='+', default=[2, 4])
    parser.add_argument('--workers', type=int, default=2, help="shared_memory's worker_num")
    parser.add_argument('--seconds', type=float, default=5.0)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--managers', nargs='+', default=list(MANAGERS), choices=MANAGERS)
    args = parser.parse_args()
    for env_num in args.envs:
        for round_ in range(args.rounds):
            measured = rates(tuple(args.managers), args.env_id, env_num, args.workers, args.seconds)
            base = measured.get('base')
            row = '  '.join(f"{m} {r:,.0f}/s" + (f" ({r / base:.2f}x)" if base and m != 'base' else '')
                            for m, r in measured.items())
            print(f"{args.env_id}, {env_num} envs, round {round_ + 1}: {row}", flush=True)


if __name__ == '__main__':
    main()
