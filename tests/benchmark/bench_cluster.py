"""Suites and searches on a simulated Ray cluster: ``ding_lite bench --ray`` and ``ding_lite tune --ray`` on three
nodes against one (``ray.cluster_utils.Cluster``: a head without CPUs and 1-CPU worker nodes, as the cluster tests
build it), each in a fresh process.

Run: ``python -m tests.benchmark.bench_cluster [--nodes 1,3] [--max-env-step 4000] [--seeds 0-1] [--trials 16]``.
The suite is the Pendulum family's first ``--configs`` configs at ``--max-env-step`` each; the search ``--trials``
trials of the zoo Pendulum SAC config (stacked by 4) at ``--tune-env-step``, sharing an Optuna journal file. Wall
time of each, per node count. Simulated nodes share this machine's cores: the figure is what the tasks' spreading
gains here, at most the machine's core count over one.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = os.path.join(ROOT, 'dizoo_configs', 'suites', 'pendulum_family.py')


def child(nodes: int, configs: int, max_env_step: int, seeds: list[int], trials: int, tune_steps: int) -> dict:
    """One cluster of ``nodes`` worker nodes: the suite's wall, then the search's."""
    import ray
    from ray.cluster_utils import Cluster
    from entry.pipeline.tune import tune
    from entry.tools.bench import bench, load_suite
    folder = tempfile.mkdtemp(prefix='dl_cluster_')
    # Ray's Cluster writes the head's address under the default temp folder, which must exist (as the tests make it)
    os.makedirs(os.path.dirname(ray._private.utils.get_ray_address_file(None)), exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=0, include_dashboard=False,
                                                                temp_dir=os.path.join(folder, 'ray')))
    for _ in range(nodes):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, logging_level='ERROR')
    try:
        entries = [entry for entry in load_suite(SUITE, max_env_step)[:configs]]
        start = time.perf_counter()
        bench(entries, seeds, os.path.join(folder, 'bench'), ray=cluster.address)
        suite_s = time.perf_counter() - start
        from ding_lite.config import read_config
        main, create = read_config(os.path.join(ROOT, 'dizoo_configs', 'pendulum_sac_config.py'))
        main.exp_name = os.path.join(folder, 'search_seed0')
        start = time.perf_counter()
        tune((main, create), tune_steps, n_trials=trials, stack=4, ray=cluster.address,
             storage=os.path.join(folder, 'search.journal'))
        tune_s = time.perf_counter() - start
    finally:
        ray.shutdown()
        cluster.shutdown()
    return {'nodes': nodes, 'suite_s': round(suite_s, 1), 'tune_s': round(tune_s, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--nodes', default='1,3')
    parser.add_argument('--configs', type=int, default=3)
    parser.add_argument('--max-env-step', type=int, default=4000)
    parser.add_argument('--seeds', default='0-1')
    parser.add_argument('--trials', type=int, default=16)
    parser.add_argument('--tune-env-step', type=int, default=2000)
    parser.add_argument('--child', type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    from entry.pipeline.seeds import parse_seeds
    seeds = parse_seeds(args.seeds)
    if args.child is not None:
        print(json.dumps(child(args.child, args.configs, args.max_env_step, seeds, args.trials, args.tune_env_step)))
        return
    results = []
    for nodes in (int(n) for n in args.nodes.split(',')):
        run = subprocess.run([sys.executable, '-W', 'ignore', '-m', 'tests.benchmark.bench_cluster', '--child',
                              str(nodes), '--configs', str(args.configs), '--max-env-step', str(args.max_env_step),
                              '--seeds', args.seeds, '--trials', str(args.trials), '--tune-env-step',
                              str(args.tune_env_step)], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, 'RAY_TMPDIR': tempfile.mkdtemp(prefix='dl_rt_')})
        if run.returncode != 0:
            raise RuntimeError(f"the {nodes}-node child failed:\n{run.stderr[-3000:]}")
        results.append(json.loads(run.stdout.strip().splitlines()[-1]))
        print(f"{nodes} node(s): suite of {args.configs} configs x seeds {args.seeds} at {args.max_env_step} env "
              f"steps {results[-1]['suite_s']} s; tune, {args.trials} trials at {args.tune_env_step} env steps "
              f"{results[-1]['tune_s']} s", flush=True)
    if len(results) > 1:
        first, last = results[0], results[-1]
        print(f"{last['nodes']} nodes against {first['nodes']}: suite {first['suite_s'] / last['suite_s']:.2f}x "
              f"faster, tune {first['tune_s'] / last['tune_s']:.2f}x faster (this machine: {os.cpu_count()} cores)")


if __name__ == '__main__':
    main()
