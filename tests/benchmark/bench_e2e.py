"""The whole loop: HalfCheetah-v5 SAC end to end (one update per env step), env steps/s over the learning phase,
against a bare loop of the same math in the same process.

Run: ``python -m tests.benchmark.bench_e2e [--device cuda] [--steps 2000] [--warmup 1000] [--rounds 3]
[--envs 1,4,16]``. Rows: the framework's ``serial_pipeline`` parts (the zoo config, hidden 256, batch 256, no
evaluation in the window) with ``policy.collect.overlap`` False (strict: collect, store, learn, in order) and
overlapped: on the CPU in a child process (``'process'``), on CUDA from a weight snapshot on a side stream
(``'stream'``), each eagerly and, on CUDA, with ``learn.cuda_graph``; and the bare loop (``bare_sac.BareSAC``:
actor sample, ``env.step``, a numpy buffer, a sampled batch moved to the device, one update). Each row runs
``--warmup`` random steps first (not timed), then times ``--steps`` learning steps; rounds interleave the rows and
the median of each row is reported with its ratio to the bare loop's. ``--envs``: the overlapped rows again with
that many envs (``n_sample`` and ``update_per_collect`` the env count: the replay ratio stays 1, so updates/s equal
env steps/s). ``--syncs`` lists where the overlapped graphed row's learning phase synchronises the host with the
GPU; ``--parts`` gives the host's time per env step in each part of that row's loop (the strict eager row on a CPU),
``--profile`` cProfile's top functions there and ``--windows`` its rate over each 1000 learn steps of one run.
``--returns N`` (CUDA): the zoo config to N env steps, seeds 0-2, strict (the seeds stacked, one graphed update)
against overlapped from the snapshot (each seed alone), both graphed: the final evaluation of each seed and the wall.
"""
from __future__ import annotations

import argparse
import collections
import os
import statistics
import tempfile
import time
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from ding_lite.config import read_config
from entry.kit.config_input import compile_run
from entry.kit.life_cycle import closing
from entry.pipeline.single import train_serial
from entry.kit.steps import build_serial, learn_sampler
from tests.benchmark.bare_sac import BareSAC

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def framework(device: str, overlap: bool | str, graphed: bool, warmup: int, steps: int, tmp: str,
              profiler: Any = None, envs: int = 1, windows: list[float] | None = None, drawn: bool = True) -> float:
    """Env steps/s of the zoo config's run between its first learn step and its last (``profiler`` enabled then),
    with ``envs`` envs (each round one step of every env, then as many updates); ``windows`` gets the rate over each
    1000 learn steps in turn. ``drawn`` False: a graphed update is given its batch (``learn.graph_sample``)."""
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', 'halfcheetah_sac_config.py'))
    main.exp_name = os.path.join(tmp, f'e2e_{overlap}_{graphed}_{time.monotonic_ns()}')
    main.policy.update(random_collect_size=warmup, cuda=device.startswith('cuda'))
    main.policy.collect.overlap = overlap
    main.policy.learn.cuda_graph = graphed
    main.policy.learn.graph_sample = drawn
    main.policy.eval.evaluator.eval_freq = 10 ** 9
    main.env.update(evaluator_env_num=1, n_evaluator_episode=1, collector_env_num=envs)
    main.policy.collect.n_sample = main.policy.learn.update_per_collect = envs
    if device.startswith('cuda'):
        main.policy.other.replay_buffer.device = device
    cfg, _ = compile_run((main, create), 0, False, None)
    marks: list[tuple[float, int]] = []
    with closing(build_serial(cfg)) as run:
        if hasattr(profiler, 'attach'):
            profiler.attach(run)
        train = run.learner.train

        def timed(batch, envstep=None):
            output = train(batch, envstep)
            marks.append((time.perf_counter(), run.collector.envstep))
            if profiler is not None and len(marks) == min(50, steps // 10) + envs:
                profiler.enable()
            return output
        run.learner.train = timed
        sample = learn_sampler(cfg, run.buffer, None, run.policy)
        sample = profiler.timed(sample, 'sample') if hasattr(profiler, 'timed') else sample
        train_serial(cfg, run, sample, max_train_iter=int(1e10), max_env_step=warmup + steps)
        if profiler is not None:
            profiler.disable()
    if device.startswith('cuda'):
        torch.cuda.synchronize()
    (t0, s0), (t1, s1) = marks[min(50, len(marks) // 10)], marks[-1]  # past the first steps (graph capture)
    if windows is not None:
        windows += [(marks[i + 1000][1] - marks[i][1]) / (marks[i + 1000][0] - marks[i][0])
                    for i in range(0, len(marks) - 1000, 1000)]
    return (s1 - s0) / (t1 - t0)


def bare(device: str, warmup: int, steps: int) -> float:
    """The same schedule as one plain loop (CleanRL style); env steps/s over its learning steps."""
    torch.manual_seed(0)
    env = gym.make('HalfCheetah-v5')
    obs, _ = env.reset(seed=0)
    sac = BareSAC(17, 6, 256, 1e-3, 1e-3, 3e-4, device=device)
    size, batch = warmup + steps, 256
    buf = {k: np.zeros((size,) + s, np.float32) for k, s in
           (('obs', (17,)), ('act', (6,)), ('rew', ()), ('next', (17,)), ('done', ()))}
    rng = np.random.default_rng(0)
    start = None
    for step in range(size):
        if step == warmup + min(50, steps // 10):
            start = time.perf_counter()
        if step < warmup:
            act = rng.uniform(-1, 1, 6).astype(np.float32)
        else:
            with torch.no_grad():
                act = sac.actor.sample(torch.as_tensor(obs, dtype=torch.float32, device=device)[None])[0][0].cpu()
            act = act.numpy()
        next_obs, reward, term, trunc, _ = env.step(act)
        for key, value in (('obs', obs), ('act', act), ('rew', reward), ('next', next_obs), ('done', term)):
            buf[key][step] = value
        obs = env.reset()[0] if term or trunc else next_obs
        if step >= warmup:
            idx = rng.integers(0, step + 1, batch)
            t = {k: torch.from_numpy(v[idx]).to(device, non_blocking=True) for k, v in buf.items()}
            sac.update(t['obs'], t['act'], t['rew'], t['next'], t['done'])
    if device.startswith('cuda'):
        torch.cuda.synchronize()
    return (size - (warmup + min(50, steps // 10))) / (time.perf_counter() - start)


def run(device: str = 'cpu', warmup: int = 1000, steps: int = 2000, rounds: int = 3,
        envs: tuple[int, ...] = (), graphed_only: bool = False) -> dict[str, float]:
    overlapped = 'stream' if device.startswith('cuda') else 'process'
    rows = {} if graphed_only else {'strict, eager': (False, False, 1), f'{overlapped}, eager': (overlapped, False, 1)}
    if device.startswith('cuda'):
        rows |= {'strict, cuda_graph': (False, True, 1), 'stream, cuda_graph': ('stream', True, 1),
                 'stream, cuda_graph, the batch copied in (graph_sample=False)': ('stream', True, 1, False)}
    graphed = device.startswith('cuda')
    rows |= {f'{overlapped}{", cuda_graph" if graphed else ", eager"}, {n} envs': (overlapped, graphed, n)
             for n in envs if n > 1}
    rates: dict[str, list[float]] = {name: [] for name in [*rows, 'bare loop']}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for name, (overlap, graph, n, *drawn) in rows.items():
                rates[name].append(framework(device, overlap, graph, warmup, steps, tmp, envs=n, drawn=all(drawn)))
                print(f"  {name}: {rates[name][-1]:.0f} env steps/s", flush=True)  # (a run cut short keeps these)
            rates['bare loop'].append(bare(device, warmup, steps))
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, value in medians.items():
        print(f"HalfCheetah-v5 SAC on {device}, {name}: {value:.0f} env steps/s over the learning phase "
              f"(rounds {', '.join(f'{v:.0f}' for v in rates[name])}), ratio to the bare loop "
              f"{value / medians['bare loop']:.2f}", flush=True)
    return medians


def returns(env_steps: int, seeds: tuple[int, ...] = (0, 1, 2)) -> None:
    """Whether acting a round behind costs learning: the final evaluations of the strict and the overlapped runs."""
    from entry import serial_pipeline
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', 'halfcheetah_sac_config.py'))
    main.policy.update(cuda=True)
    main.policy.learn.cuda_graph = True
    with tempfile.TemporaryDirectory() as tmp:
        for overlap in (False, 'stream'):
            main.exp_name = os.path.join(tmp, f'returns_{overlap}_seed0')
            main.policy.collect.overlap = overlap
            start = time.perf_counter()
            if overlap:  # acting from the snapshot is a single run's
                for seed in seeds:
                    serial_pipeline((main, create), seed=seed, max_env_step=env_steps)
            else:
                serial_pipeline((main, create), seed=list(seeds), max_env_step=env_steps)
            wall = time.perf_counter() - start
            finals = []
            for seed in seeds:
                path = os.path.join(tmp, f'returns_{overlap}_seed{seed}', 'log', 'evaluator.csv')
                rows = open(path).read().splitlines()
                finals.append(float(rows[-1].split(',')[3]))
            print(f"HalfCheetah-v5 to {env_steps} env steps, {overlap or 'strict'}, cuda_graph: final evaluation "
                  f"{', '.join(f'{r:.0f}' for r in finals)} (seeds {', '.join(map(str, seeds))}), {wall:.0f} s",
                  flush=True)


class SyncAudit:
    """Where the host waits for the GPU: torch's sync debug mode, on while enabled, its warnings counted by the
    line of the framework that made them."""

    def __init__(self) -> None:
        self._catcher = warnings.catch_warnings(record=True)
        self.records: list = []

    def enable(self) -> None:
        self.records = self._catcher.__enter__()
        warnings.simplefilter('always')
        torch.cuda.set_sync_debug_mode('warn')

    def disable(self) -> None:
        torch.cuda.set_sync_debug_mode('default')
        self._catcher.__exit__(None, None, None)

    def report(self, steps: int) -> None:
        where = collections.Counter(f"{os.path.relpath(r.filename, ROOT)}:{r.lineno}" for r in self.records
                                    if 'synchroniz' in str(r.message))
        print(f"host syncs over {steps} learning env steps: {sum(where.values())}")
        for line, count in where.most_common(20):
            print(f"  {count:6d}  {line}")


class PartTimer:
    """Host time per env step of the loop's parts while enabled (on CUDA the host's own time: launches, copies and
    the waits it makes), and the rest of the loop as ``other``."""

    PARTS = (('collector', 'collect_batch', 'collect round'), ('policy', '_forward_collect_batch', '  collect forward'),
             ('collector_env', 'step_batch', '  env step'), ('buffer', 'push', 'push'), (None, None, 'sample'),
             ('learner', 'train', 'learn step'), ('policy', '_update', '  update (replay)'),
             ('policy', '_learn_drawn', '  update (replay)'), ('evaluator', 'eval', 'final evaluation'))

    def __init__(self) -> None:
        self.spent: collections.Counter = collections.Counter()
        self.on, self.start, self.wall = False, 0.0, 0.0

    def attach(self, run: Any) -> None:
        for owner, name, label in self.PARTS:
            if owner is not None:  # (the sampler: framework times it)
                obj = getattr(run, owner)
                setattr(obj, name, self.timed(getattr(obj, name), label))

    def timed(self, fn: Any, label: str) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.on:
                return fn(*args, **kwargs)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[label] += time.perf_counter() - start
        return timed

    def enable(self) -> None:
        self.on, self.start = True, time.perf_counter()

    def disable(self) -> None:
        self.on, self.wall = False, time.perf_counter() - self.start

    def report(self, env_steps: int) -> None:
        per = lambda t: t / env_steps * 1e6  # noqa: E731
        top = sum(t for label, t in self.spent.items() if not label.startswith(' '))
        print(f"host time per env step: {per(self.wall):.0f} us in all")
        for label in dict.fromkeys(label for _, _, label in self.PARTS):
            print(f"  {label:<20} {per(self.spent[label]):7.1f} us")
        print(f"  {'other':<20} {per(self.wall - top):7.1f} us (the loop, logs, checkpoints)")


def profile(device: str, warmup: int, steps: int, top: int = 35) -> None:
    """Where the wall goes, in the row ``--parts`` times (the stream-overlapped graphed row on CUDA, the strict row
    elsewhere): cProfile's top functions by own and by cumulative time."""
    import cProfile
    import pstats
    profiler = cProfile.Profile()
    cuda = device.startswith('cuda')
    with tempfile.TemporaryDirectory() as tmp:
        rate = framework(device, 'stream' if cuda else False, cuda, warmup, steps, tmp, profiler)
    print(f"profiled {'stream, cuda_graph' if cuda else 'strict'} row on {device}: {rate:.0f} env steps/s (under the "
          f"profiler)")
    for key in ('tottime', 'cumulative'):
        pstats.Stats(profiler).sort_stats(key).print_stats(top)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--warmup', type=int, default=1000)
    parser.add_argument('--steps', type=int, default=2000)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--envs', default='', help="comma-separated env counts for the overlapped row, e.g. 4,16")
    parser.add_argument('--graphed-only', action='store_true', help="on CUDA, leave the eager rows out")
    parser.add_argument('--returns', type=int, default=0, help="(CUDA) strict against overlapped returns at N env "
                        "steps, seeds 0-2")
    parser.add_argument('--profile', action='store_true', help="cProfile the --parts row instead of timing the rows")
    parser.add_argument('--syncs', action='store_true', help="list the host syncs of the overlapped graphed row")
    parser.add_argument('--windows', action='store_true', help="one run of the row --parts times, its rate over "
                        "each 1000 learn steps (whether a long run settles faster than --steps 1200 shows)")
    parser.add_argument('--parts', action='store_true', help="host time per env step of the loop's parts, for the "
                        "overlapped graphed row on CUDA (the strict row elsewhere)")
    args = parser.parse_args()
    if args.profile:
        profile(args.device, args.warmup, args.steps)
    elif args.returns:
        returns(args.returns)
    elif args.parts:
        timer = PartTimer()
        with tempfile.TemporaryDirectory() as tmp:
            overlap = 'stream' if args.device.startswith('cuda') else False
            rate = framework(args.device, overlap, args.device.startswith('cuda'), args.warmup, args.steps, tmp, timer)
        print(f"{overlap or 'strict'}, {'cuda_graph' if overlap else 'eager'}, 1 env: {rate:.0f} env steps/s "
              f"with the parts timed")
        timer.report(round(rate * timer.wall))
    elif args.windows:
        cuda, per = args.device.startswith('cuda'), []
        with tempfile.TemporaryDirectory() as tmp:
            rate = framework(args.device, 'stream' if cuda else False, cuda, args.warmup, args.steps, tmp, windows=per)
        print(f"{'stream, cuda_graph' if cuda else 'strict, eager'}, 1 env, {args.steps} learn steps: {rate:.0f} env "
              f"steps/s; per 1000: {', '.join(f'{w:.0f}' for w in per)}")
    elif args.syncs:
        audit = SyncAudit()
        with tempfile.TemporaryDirectory() as tmp:
            rate = framework(args.device, 'stream', True, args.warmup, args.steps, tmp, audit)
        print(f"stream, cuda_graph under the sync audit: {rate:.0f} env steps/s")
        audit.report(args.steps)
    else:
        run(args.device, args.warmup, args.steps, args.rounds, tuple(int(n) for n in args.envs.split(',') if n),
            args.graphed_only)
