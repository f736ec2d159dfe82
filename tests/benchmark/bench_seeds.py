"""Many seeds in one run against the same seeds one at a time and as processes side by side.

Run: ``python -m tests.benchmark.bench_seeds [--seeds 0-4] [--rounds 1] [--updates 300] [--halfcheetah 20000]
[--device cuda]`` (on a GPU, the issue's row: ``--seeds 0-9 --skip-pendulum --halfcheetah 20000 --device cuda``).

1. Pendulum zoo config, each seed to -250 (or 60k env steps), three ways per round, interleaved: one batched run
   (``--seeds``), the seeds one after another in one process, and one process per seed at once. Each way runs in a
   fresh subprocess: wall time and peak RSS (summed over the processes side by side).
2. The learn step alone at HalfCheetah's sizes (hidden 256, batch 256, obs 17, action 6) and Pendulum's (hidden 128,
   batch 128), S seeds stacked against one seed, ``--updates`` each, interleaved: updates/s per seed. The bare
   baseline is the single seed's step.
3. With ``--halfcheetah N``: the HalfCheetah zoo config (``mujoco`` extra) for N env steps (its first 10k are random
   actions), the seeds as one batched run against the first seed alone, each in a fresh subprocess: wall time and
   updates/s per seed end to end (evaluations and collection included); with ``--device cuda`` the learner and its
   buffer on the GPU. With ``--processes`` also the seeds as one process each, started together, as a user with a
   many-core GPU host might launch them: wall from launch to the last one's end against the batched run's, and peak
   memory (torch's peak reserved GPU memory summed over the processes; each also holds a CUDA context of its own).
   The issue's rows: ``--seeds 0-9 --skip-pendulum --halfcheetah 12000 --device cuda --cuda-graph --processes
   --no-learn-step``, and the same with ``--halfcheetah 50000``. ``--profile``: the batched run (its first env
   manager) under cProfile, and where its host time went (its walls then include the profiler's cost).
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import csv
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from typing import Iterator

STOP, MAX_ENV_STEP = -250.0, 60_000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _zoo(config: str, seeds: list[int], tmp: str, max_env_step: int, device: str = 'cpu',
         cuda_graph: bool = False, env_manager: str | None = None) -> dict[str, float]:
    """``dizoo_configs/<config>_config.py`` over ``seeds`` (one batched run where there are several) for at most
    ``max_env_step``: wall time, the first seed's first evaluation's wall (its warm-up's too), and each seed's env
    steps to ``STOP``."""
    from ding_lite.config import read_config
    from entry import serial_pipeline
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', f'{config}_config.py'))
    if env_manager:
        create.env_manager.type = env_manager
    main.exp_name = os.path.join(tmp, f'{config}_seed0')
    main.policy.cuda = device.startswith('cuda')  # the replay buffer follows the learner's device
    main.policy.learn.cuda_graph = cuda_graph
    start = time.perf_counter()
    serial_pipeline((main, create), seed=seeds if len(seeds) > 1 else seeds[0], max_env_step=max_env_step)
    wall = time.perf_counter() - start
    steps, first = {}, None
    for seed in seeds:
        rows = list(csv.DictReader(open(os.path.join(tmp, f'{config}_seed{seed}', 'log', 'evaluator.csv'))))
        steps[seed] = next((int(r['envstep']) for r in rows if float(r['return_mean']) >= STOP), None)
        first = float(rows[0]['wall_time']) if first is None else first
    return {'wall_s': wall, 'env_steps': steps, 'first_eval_s': first}


def _child(mode: str, seeds: list[int], config: str, max_env_step: int, device: str, cuda_graph: bool,
           env_manager: str | None = None, profile_to: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if mode == 'batched':
            profiler = cProfile.Profile() if profile_to else None
            with profiler or contextlib.nullcontext():
                result = _zoo(config, seeds, tmp, max_env_step, device, cuda_graph, env_manager)
            if profiler is not None:
                with open(profile_to, 'w') as out:
                    for order in ('tottime', 'cumulative'):
                        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(40)
        else:  # 'sequential'
            start, steps = time.perf_counter(), {}
            for seed in seeds:
                steps |= _zoo(config, [seed], tmp, max_env_step)['env_steps']
            result = {'wall_s': time.perf_counter() - start, 'env_steps': steps}
    result['peak_rss_gb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    if device.startswith('cuda'):  # what torch's allocator held at most (each process holds a CUDA context too)
        import torch
        result['peak_gpu_gb'] = torch.cuda.max_memory_reserved() / 1024 ** 3
    print(json.dumps(result))


def _spawn(mode: str, seeds: list[int], threads: int | None = None, config: str = 'pendulum_sac',
           max_env_step: int = MAX_ENV_STEP, device: str = 'cpu', cuda_graph: bool = False,
           env_manager: str | None = None, profile_to: str | None = None) -> subprocess.Popen:
    env = {**os.environ, **({'OMP_NUM_THREADS': str(threads)} if threads else {})}
    return subprocess.Popen([sys.executable, '-W', 'ignore', '-m', 'tests.benchmark.bench_seeds', '--child', mode,
                             '--seeds', ','.join(map(str, seeds)), '--config', config, '--max-env-step',
                             str(max_env_step), '--device', device, *(['--cuda-graph'] if cuda_graph else []),
                             *(['--env-manager', env_manager] if env_manager else []),
                             *(['--profile-to', profile_to] if profile_to else [])],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env=env)


def _result(process: subprocess.Popen) -> dict:
    out, _ = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"benchmark child failed ({process.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def pendulum_round(seeds: list[int]) -> Iterator[tuple[str, dict]]:
    """``(way, result)`` of each way in turn. The processes side by side get a share of the cores each (torch's
    default of every core per process oversubscribes them: five Pendulum runs on 2 cores crawled at 35 env
    steps/s)."""
    for mode in ('batched', 'sequential'):
        yield mode, _result(_spawn(mode, seeds))
    start = time.perf_counter()
    threads = max(1, (os.cpu_count() or 1) // len(seeds))
    parallel = [_spawn('batched', [seed], threads) for seed in seeds]  # one process per seed, all at once
    outs = [_result(p) for p in parallel]
    yield 'processes', {'wall_s': time.perf_counter() - start, 'peak_rss_gb': sum(o['peak_rss_gb'] for o in outs),
                        'env_steps': {k: v for o in outs for k, v in o['env_steps'].items()}}


def halfcheetah(seeds: list[int], env_steps: int, device: str = 'cpu', cuda_graph: bool = False,
                env_manager: str | None = None, profile_to: str | None = None) -> dict[str, float]:
    """The HalfCheetah zoo config on ``device``: the seeds batched (envs in ``env_manager``, default the config's;
    under cProfile, its stats written to ``profile_to``, where given), then the first seed alone (the config's
    manager); updates/s per seed end to end."""
    updates = env_steps - 10_000  # its random_collect_size, then one update per env step
    kwargs = dict(config='halfcheetah_sac', max_env_step=env_steps, device=device, cuda_graph=cuda_graph)
    launched = time.perf_counter()
    batched = _result(_spawn('batched', seeds, env_manager=env_manager, profile_to=profile_to, **kwargs))
    launched = time.perf_counter() - launched
    single = _result(_spawn('batched', seeds[:1], **kwargs))
    return {'batched_s': batched['wall_s'], 'single_s': single['wall_s'], 'batched_launch_s': launched,
            'batched_first_eval_s': batched['first_eval_s'], 'single_first_eval_s': single['first_eval_s'],
            'per_seed_batched': updates * len(seeds) / batched['wall_s'], 'per_seed_single': updates / single['wall_s'],
            'peak_rss_gb': batched['peak_rss_gb'], 'peak_gpu_gb': batched.get('peak_gpu_gb', 0.0)}


def halfcheetah_processes(seeds: list[int], env_steps: int, device: str = 'cpu',
                          cuda_graph: bool = False) -> dict[str, float]:
    """The HalfCheetah zoo config's seeds as one process each, started together on ``device`` (the host's cores
    shared among them): the wall from their launch to the last one's end, and their peak memory summed."""
    threads = max(1, (os.cpu_count() or 1) // len(seeds))
    start = time.perf_counter()
    children = [_spawn('batched', [seed], threads, config='halfcheetah_sac', max_env_step=env_steps, device=device,
                       cuda_graph=cuda_graph) for seed in seeds]
    outs = [_result(child) for child in children]
    return {'launch_s': time.perf_counter() - start, 'slowest_s': max(o['wall_s'] for o in outs),
            'peak_rss_gb': sum(o['peak_rss_gb'] for o in outs),
            'peak_gpu_gb': sum(o.get('peak_gpu_gb', 0.0) for o in outs)}


SIZES = {'HalfCheetah': (17, 6, 256, 256), 'Pendulum': (3, 1, 128, 128)}  # obs, action, hidden, batch


def learn_step(n_seeds: int, updates: int, device: str = 'cpu', sizes: str = 'HalfCheetah',
               cuda_graph: bool = False) -> dict[str, float]:
    """Updates/s per seed: ``n_seeds`` stacked against one, at a zoo config's sizes, interleaved in blocks."""
    import torch
    from ding_lite.config import compile_config
    from ding_lite.data import default_collate
    from policy_zoo import create_policy
    from entry.pipeline.seed_axis import SeedAxis
    obs, act, hidden, batch_size = SIZES[sizes]
    model = dict(obs_shape=obs, action_shape=act, twin_critic=True, actor_head_hidden_size=hidden,
                 critic_head_hidden_size=hidden)
    main = dict(exp_name='unused', policy=dict(model=model, learn=dict(batch_size=batch_size, cuda_graph=cuda_graph),
                                               device=device))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type='sac')), save_cfg=False).policy
    batch = default_collate([{'obs': torch.randn(obs), 'action': torch.rand(act) * 2 - 1, 'reward': 0.0,
                              'next_obs': torch.randn(obs), 'done': False} for _ in range(batch_size)])
    batch = {key: value.to(device) for key, value in batch.items()}  # as a buffer on the device gives it
    single = create_policy(cfg, enable_field=['learn'])
    axis = SeedAxis([create_policy(cfg, enable_field=['learn']) for _ in range(n_seeds)])
    times = {'single': 0.0, 'stacked': 0.0}
    sync = torch.cuda.synchronize if device.startswith('cuda') else (lambda: None)
    for _ in range(3):  # warm-up, then blocks of each, alternating
        single._forward_learn(batch), axis.forward([batch] * n_seeds)
    block = max(updates // 5, 1)
    for _ in range(5):
        for name, step in (('single', lambda: single._forward_learn(batch)),
                           ('stacked', lambda: axis.forward([batch] * n_seeds))):
            sync()
            start = time.perf_counter()
            for _ in range(block):
                step()
            sync()
            times[name] += time.perf_counter() - start
    per_seed = {'single': 5 * block / times['single'], 'stacked': 5 * block * n_seeds / times['stacked']}
    return {'updates_per_s_per_seed_single': per_seed['single'],
            'updates_per_s_per_seed_stacked': per_seed['stacked'],
            'stacked_step_over_single': times['stacked'] / times['single']}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', default='0-4')
    parser.add_argument('--rounds', type=int, default=1)
    parser.add_argument('--updates', type=int, default=300)
    parser.add_argument('--device', default='cpu', help="the learner's device (cuda: where a GPU is), for the learn "
                                                        "step and HalfCheetah end to end")
    parser.add_argument('--skip-pendulum', action='store_true')
    parser.add_argument('--halfcheetah', type=int, default=0, help='also HalfCheetah end to end, this many env steps')
    parser.add_argument('--cuda-graph', action='store_true', help="learn.cuda_graph (CUDA): one captured update")
    parser.add_argument('--env-managers', default='', help="HalfCheetah's batched run with each of these env managers "
                        "(comma-separated, e.g. base,subprocess; default the config's)")
    parser.add_argument('--env-manager', default=None, help=argparse.SUPPRESS)  # a child's
    parser.add_argument('--no-learn-step', action='store_true', help="leave the learn step alone out")
    parser.add_argument('--processes', action='store_true', help="HalfCheetah's seeds also as one process each, "
                        "started together (the seeds batched against N processes)")
    parser.add_argument('--profile', action='store_true', help="the batched HalfCheetah run (its first env manager) "
                        "under cProfile: where its host time goes")
    parser.add_argument('--profile-to', default=None, help=argparse.SUPPRESS)  # a child's
    parser.add_argument('--child', default=None)
    parser.add_argument('--config', default='pendulum_sac', help=argparse.SUPPRESS)  # a child's zoo config
    parser.add_argument('--max-env-step', type=int, default=MAX_ENV_STEP, help=argparse.SUPPRESS)
    args = parser.parse_args()
    from entry.pipeline.seeds import parse_seeds
    seeds = parse_seeds(args.seeds)
    if args.child:
        _child(args.child, seeds, args.config, args.max_env_step, args.device, args.cuda_graph, args.env_manager,
               args.profile_to)
        return
    managers = args.env_managers.split(',') if args.env_managers else [None]
    for manager in managers if args.halfcheetah else []:
        profile_to = os.path.join(tempfile.mkdtemp(), 'profile.txt') if args.profile and manager == managers[0] \
            else None
        result = halfcheetah(seeds, args.halfcheetah, args.device, args.cuda_graph, manager, profile_to)
        envs = f' ({manager} envs)' if manager else ''
        print(f"HalfCheetah, {args.halfcheetah} env steps: {len(seeds)} seeds batched{envs} "
              f"{result['batched_s']:.1f} s ({result['per_seed_batched']:.1f} updates/s per seed, the first evaluation "
              f"done at {result['batched_first_eval_s']:.1f} s, peak RSS {result['peak_rss_gb']:.2f} GB), one seed "
              f"{result['single_s']:.1f} s ({result['per_seed_single']:.1f} updates/s, first evaluation done at "
              f"{result['single_first_eval_s']:.1f} s): {result['batched_s'] / result['single_s']:.2f}x", flush=True)
        if profile_to:
            print(f"the batched run under cProfile:\n{open(profile_to).read()}", flush=True)
        if args.processes and manager == managers[0]:
            apart = halfcheetah_processes(seeds, args.halfcheetah, args.device, args.cuda_graph)
            print(f"HalfCheetah, {args.halfcheetah} env steps: {len(seeds)} seeds batched{envs} "
                  f"{result['batched_launch_s']:.1f} s from launch (peak GPU memory {result['peak_gpu_gb']:.2f} GB, "
                  f"RSS {result['peak_rss_gb']:.2f} GB) against {len(seeds)} one-seed processes started together "
                  f"{apart['launch_s']:.1f} s to the last one's end (its run {apart['slowest_s']:.1f} s; peak GPU "
                  f"memory {apart['peak_gpu_gb']:.2f} GB summed, RSS {apart['peak_rss_gb']:.2f} GB): processes / "
                  f"batched {apart['launch_s'] / result['batched_launch_s']:.2f}x", flush=True)
    for sizes in [] if args.no_learn_step else SIZES:
        step = learn_step(len(seeds), args.updates, args.device, sizes, args.cuda_graph)
        print(f"learn step, {sizes} sizes, {len(seeds)} seeds stacked: {step['updates_per_s_per_seed_stacked']:.0f} "
              f"updates/s per seed vs {step['updates_per_s_per_seed_single']:.0f} alone; one stacked step = "
              f"{step['stacked_step_over_single']:.2f}x one seed's", flush=True)
    if args.skip_pendulum:
        return
    for round_ in range(args.rounds):
        for mode, result in pendulum_round(seeds):
            if mode == 'sequential':
                result['one_seed_s'] = result['wall_s'] / len(seeds)
            print(f"round {round_} {mode:<10} wall {result['wall_s']:6.1f} s, peak RSS {result['peak_rss_gb']:.2f} GB; "
                  f"env steps to {STOP:.0f}: {result['env_steps']}", flush=True)


if __name__ == '__main__':
    main()
