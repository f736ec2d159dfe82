"""The parallel pipeline on Ray against the serial pipeline, on this machine.

Run: ``python -m tests.benchmark.bench_parallel [--seconds 15] [--env-steps 20000] [--collectors 1 2]
[--n-samples 10 100]``.
1. Collected env steps/s: the serial collector (in this process) against 1 and 2 collector actors, each stepping
   the zoo config's 10 Pendulum envs with the SAC collect policy, ``n_sample`` transitions per request, every batch
   pushed into a replay buffer here. On Pendulum and on a slow Pendulum (a 5 ms physics step, so collection, not
   the CPU, is the bottleneck).
2. Learner updates/s: the Pendulum zoo config for ``--env-steps`` env steps, serial and with 2 collectors: updates
   per second spent in the learn step, updates per wall second, and where the parallel driver's time went.
Ratios are parallel / serial, measured in the same process.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import tempfile
import time
from types import SimpleNamespace

import ray
import torch

from ding_lite.config import compile_config, read_config
from ding_lite.data import ReplayBuffer
from ding_lite.data.collate import unflatten_batch
from ding_lite.registry import ENV_REGISTRY, LEARNER_REGISTRY
from ding_lite.worker import BaseLearner, SampleSerialCollector
from entry import parallel_pipeline, serial_pipeline
from entry.parallel.pipeline import ParallelLoop
from entry.parallel.workers import ActorPool
from entry.kit.run_parts import build_envs, collect_batch
from envs import PendulumEnv, get_vec_env_setting
from policy_zoo import create_policy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEP_DELAY = 0.005  # seconds of simulated physics per env step


@ENV_REGISTRY.register('slow_pendulum', force_overwrite=True)
class SlowPendulumEnv(PendulumEnv):
    """Pendulum whose every step also waits ``STEP_DELAY`` seconds, as a costly simulator would (without CPU)."""

    def step(self, action):
        time.sleep(STEP_DELAY)
        return super().step(action)


class TimingLearner(BaseLearner):
    """Counts the calls of ``train`` and the seconds spent in them (the learn step itself)."""

    seconds, calls = 0.0, 0

    def train(self, data, envstep=-1):
        start = time.perf_counter()
        output = super().train(data, envstep)
        TimingLearner.seconds += time.perf_counter() - start
        TimingLearner.calls += 1
        return output


def _config(exp: str, env_type: str = 'pendulum', collectors: int = 2):
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', 'pendulum_sac_config.py'))
    main.exp_name, main.parallel = exp, dict(collector_num=collectors)
    create.env.type = env_type
    return main, create


def serial_collect_rate(cfg, seconds: float) -> float:
    """Env steps/s of the serial pipeline's collection (columnar ``collect_batch``, as the actors) + push, here."""
    policy = create_policy(cfg.policy, enable_field=['collect'])
    collector_env, evaluator_env = build_envs(cfg)
    evaluator_env.close()
    collector = SampleSerialCollector(cfg.policy.collect.collector, collector_env, policy.collect_mode,
                                      exp_name=cfg.exp_name)
    buffer = ReplayBuffer({'replay_buffer_size': 100_000})
    buffer.push(collect_batch(collector, cfg.policy.collect.n_sample))
    start, steps = time.perf_counter(), collector.envstep
    while time.perf_counter() - start < seconds:
        buffer.push(collect_batch(collector, cfg.policy.collect.n_sample))
    rate = (collector.envstep - steps) / (time.perf_counter() - start)
    collector.close()
    return rate


def parallel_collect_rate(cfg, seconds: float) -> float:
    """Env steps/s that ``parallel.collector_num`` collector actors deliver into a replay buffer here (one request
    in flight each, as the pipeline keeps them; no learning, so nothing else competes for the CPU here)."""
    policy = create_policy(cfg.policy, enable_field=['eval'])
    run = SimpleNamespace(policy=policy, env_setting=get_vec_env_setting(cfg.env), learner=SimpleNamespace(
        exp_name=cfg.exp_name), loop=ParallelLoop(cfg.seed, cfg.parallel.collector_num),
        logger=logging.getLogger('bench_parallel'))
    pool = ActorPool(ray, cfg, run, resumed=False)
    pool.start()
    buffer, n_sample = ReplayBuffer({'replay_buffer_size': 100_000}), cfg.policy.collect.n_sample
    try:
        for slot in pool.collectors:
            pool.submit(slot, 'collect', n_sample, pool.weights_for(slot, 0))
        received, start = 0, None
        while start is None or time.perf_counter() - start < seconds:
            for slot, result in pool.wait(pool.collectors, 1.0):
                buffer.push(unflatten_batch({k: torch.from_numpy(v.copy()) for k, v in result['batch'].items()}))
                pool.submit(slot, 'collect', n_sample, None)
                if start is None and slot is pool.collectors[-1]:  # every actor is up: start the clock
                    start = time.perf_counter()
                elif start is not None:
                    received += result['count']
        return received / (time.perf_counter() - start)
    finally:
        pool.close()


def collection(seconds: float, collector_nums: list[int], n_samples: list[int]) -> None:
    for env_type, n_sample in [('pendulum', n) for n in n_samples] + [('slow_pendulum', n_samples[0])]:
        with tempfile.TemporaryDirectory() as tmp:
            main, create = _config(os.path.join(tmp, 'exp'), env_type)
            main.policy.collect.n_sample = n_sample
            serial = serial_collect_rate(compile_config(main, create, save_cfg=False), seconds)
            line = (f"collection, {env_type}, 10 envs per collector, n_sample {n_sample}: serial collector "
                    f"{serial:.0f} env steps/s")
            for n in collector_nums:
                main.parallel.collector_num = n
                rate = parallel_collect_rate(compile_config(main, create, save_cfg=False), seconds)
                line += f"; {n} actor(s) {rate:.0f}/s (ratio {rate / serial:.2f})"
            print(line, flush=True)


def learning(env_steps: int) -> None:
    LEARNER_REGISTRY.register('timing', TimingLearner, force_overwrite=True)
    results = {}
    for name, pipeline in (('serial', serial_pipeline), ('parallel', parallel_pipeline)):
        with tempfile.TemporaryDirectory() as tmp:
            main, create = _config(os.path.join(tmp, 'exp'))
            main.policy.learn.learner = dict(type='timing')
            main.env.stop_value = 1e9  # run the whole budget
            TimingLearner.seconds, TimingLearner.calls, start = 0.0, 0, time.perf_counter()
            pipeline((main, create), seed=0, max_env_step=env_steps)
            wall = time.perf_counter() - start
            iters = TimingLearner.calls
            summary = open(os.path.join(tmp, 'exp', 'log', 'summary.txt')).read()
            results[name] = (iters / TimingLearner.seconds, iters / wall)
            where = re.search(r'learner busy.*', summary)
            print(f"learning, {name}: {iters:.0f} updates, {results[name][0]:.0f} updates/s in the learn step, "
                  f"{results[name][1]:.0f} updates/wall s" + (f" ({where.group(0)})" if where else ''), flush=True)
    print(f"learning: parallel / serial learn-step rate {results['parallel'][0] / results['serial'][0]:.2f}, "
          f"per wall second {results['parallel'][1] / results['serial'][1]:.2f}")


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--seconds', type=float, default=15.0)
    parser.add_argument('--env-steps', type=int, default=20_000)
    parser.add_argument('--collectors', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--n-samples', type=int, nargs='+', default=[10, 100], help='transitions per request')
    args = parser.parse_args()
    ray.init(num_cpus=max(args.collectors) + 1, include_dashboard=False, logging_level='WARNING')
    collection(args.seconds, args.collectors, args.n_samples)
    learning(args.env_steps)
    ray.shutdown()
