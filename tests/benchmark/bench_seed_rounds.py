"""The host time of a run of many seeds' collect round (one env step of every seed's envs, one collect forward for
all, one push into the seeds' shared buffers), each seed's step counted on its own against all of them in one pass
(``StepsTogether``).

Run: ``python -m tests.benchmark.bench_seed_rounds [--seeds 10] [--envs 1] [--rounds 300] [--blocks 10]``: tiny
Pendulum SAC policies on the seed axis, the two ways in alternating blocks of ``--rounds`` rounds in one process;
prints the median microseconds per round of each way and their ratio.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time
from functools import partial

import torch

from ding_lite.config import compile_config
from ding_lite.data import ReplayBuffer
from ding_lite.data.seed_buffers import SeedBuffers
from ding_lite.worker import SampleSerialCollector
from ding_lite.worker.collect_round import StepsTogether, collect_batches
from entry.pipeline.seed_axis import SeedAxis
from envs import PendulumEnv, create_env_manager
from policy_zoo import SACPolicy
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--seeds', type=int, default=10)
    parser.add_argument('--envs', type=int, default=1)
    parser.add_argument('--rounds', type=int, default=300)
    parser.add_argument('--blocks', type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = compile_config(copy.deepcopy(TINY_PENDULUM), create_cfg=copy.deepcopy(TINY_CREATE), save_cfg=False)
    policies = [SACPolicy(cfg.policy) for _ in range(args.seeds)]
    axis = SeedAxis(policies)
    collectors = []
    for k, policy in enumerate(policies):
        env = create_env_manager(dict(type='base'), [partial(PendulumEnv, cfg={})] * args.envs)
        env.seed(k)
        collectors.append(SampleSerialCollector(cfg.policy.collect.collector, env, policy.collect_mode,
                                                exp_name='bench_seed_rounds'))

    def forward(obs, which):
        full = [None] * args.seeds
        for k, o in zip(which, obs):
            full[k] = o
        outputs = axis.act('collect', full)
        return [outputs[k] for k in which]
    buffers = [ReplayBuffer(dict(replay_buffer_size=200_000)) for _ in range(args.seeds)]
    for buffer, batch in zip(buffers, collect_batches(collectors, args.envs, forward=forward)):
        buffer.push(batch)
    shared, together = SeedBuffers(buffers), StepsTogether(collectors)
    times: dict[str, list[float]] = {'each on its own': [], 'in one pass': []}
    for _ in range(args.blocks):
        for name, way in (('each on its own', None), ('in one pass', together)):
            start = time.perf_counter()
            for _ in range(args.rounds):
                if not shared.push_all(collect_batches(collectors, args.envs, forward=forward, together=way)):
                    raise RuntimeError("the seeds' buffers stopped standing alike")
            times[name].append((time.perf_counter() - start) / args.rounds * 1e6)
    medians = {name: statistics.median(values[1:]) for name, values in times.items()}  # (the first: warm-up)
    for name, median in medians.items():
        print(f"{args.seeds} seeds x {args.envs} envs, counted {name}: {median:.0f} us per round")
    print(f"in one pass / each on its own: {medians['in one pass'] / medians['each on its own']:.2f}")
    for collector in collectors:
        collector.close()


if __name__ == '__main__':
    main()
