"""Many seeds' EnvPool pools stepped at once (``step_batch_begin``: every pool's actions sent before any step is
received) against one pool after another, as a run of stacked seeds steps them.

Run: ``python -m tests.benchmark.bench_envpool_pools [--env-id HalfCheetah-v5] [--pools 2] [--envs 4]
[--threads 1 0] [--seconds 3] [--rounds 2]`` (the ``envpool`` extra). Random actions, the two ways taking turns every
half second; each round prints env steps/s both ways and their ratio.
"""
from __future__ import annotations

import argparse
import time
from functools import partial
from typing import Any

import numpy as np

from envs import GymnasiumEnv, create_env_manager


def _pools(env_id: str, pools: int, envs: int, threads: int) -> list[Any]:
    managers = []
    for seed in range(pools):
        manager = create_env_manager(dict(type='envpool', num_threads=threads),
                                     [partial(GymnasiumEnv, cfg={'env_id': env_id})] * envs)
        manager.seed(seed)
        manager.launch()
        managers.append(manager)
    return managers


def _rate(managers: list[Any], together: bool, seconds: float, rng: np.random.Generator) -> float:
    ids = list(range(managers[0].env_num))
    shape = (len(ids), *managers[0].action_space.shape)
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        actions = rng.uniform(-1, 1, shape).astype(np.float32)
        if together:
            for finish in [manager.step_batch_begin(ids, actions) for manager in managers]:
                finish()
        else:
            for manager in managers:
                manager.step_batch(ids, actions)
        steps += len(ids) * len(managers)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--env-id', default='HalfCheetah-v5')
    parser.add_argument('--pools', type=int, default=2)
    parser.add_argument('--envs', type=int, default=4)
    parser.add_argument('--threads', type=int, nargs='+', default=[1, 0], help="EnvPool's num_threads (0: its own)")
    parser.add_argument('--seconds', type=float, default=3.0)
    parser.add_argument('--rounds', type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for threads in args.threads:
        managers = _pools(args.env_id, args.pools, args.envs, threads)
        turns = max(1, int(args.seconds))  # half a second each way per turn
        for _ in range(args.rounds):
            rates = {True: 0.0, False: 0.0}
            for _ in range(turns):
                for together in (True, False):
                    rates[together] += _rate(managers, together, 0.5, rng) / turns
            print(f"{args.pools} pools x {args.envs} {args.env_id}, num_threads={threads}: at once "
                  f"{rates[True]:.0f} env steps/s, one after another {rates[False]:.0f} "
                  f"({rates[True] / rates[False]:.2f}x)", flush=True)
        for manager in managers:
            manager.close()


if __name__ == '__main__':
    main()
