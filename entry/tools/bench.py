"""``ding_lite bench``: configs x seeds as benchmarks. Each config's seeds train as one run (stacked where the policy
stacks), each in ``<out>/<name>/<name>_seed<k>/``; a finished config is skipped when the command runs again, an
unfinished one resumes from its resume points. The results: ``results.csv`` and ``results.md`` (a row per config:
the IQM of the final evaluations with its 95% stratified-bootstrap interval, mean, median, env steps to the stop value
per seed, wall time, env steps/s, the suite's reference scores), learning curves with IQM bands and a performance
profile across the suite."""
from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import runpy
import shutil
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ding_lite.config import ConfigError, read_config
from ding_lite.utils.checkpoint import atomic_write_text
from ..kit import life_cycle
from ..kit.ray_join import import_ray, join_ray
from .aggregate import interval, statistic

PROGRESS_EVERY = 15.0  # seconds between the live table's lines while a suite runs on Ray
STOP_FILE = '.bench_stop'  # in the runs' folder: written by a driver told to stop, read by its Ray tasks
CONTINUED = ' (finished configs are skipped, the others resume)'
SUITE_KEYS = ('config', 'name', 'max_env_step', 'set', 'reference')
COLUMNS = ('config', 'seeds', 'max_env_step', 'iqm', 'iqm_low', 'iqm_high', 'mean', 'median', 'final', 'stop_value',
           'steps_to_stop', 'wall_s', 'env_steps_per_s', 'reference', 'reference_source')


@dataclass
class Entry:
    """One config of a suite: its file, its name (its folder under ``--out``), its budget, its overrides (the CLI's
    ``--set``) and reference scores with their source."""

    config: str
    name: str
    max_env_step: int
    overrides: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] | None = None


def load_suite(path: str, max_env_step: int | None = None) -> list[Entry]:
    """The entries of a suite file: a Python file whose ``suite`` is a list of dicts (``config``, and optionally
    ``name``, ``max_env_step``, ``set``, ``reference=dict(score=..., source=...)``); config paths relative to the
    suite file or the working directory. ``max_env_step`` (``--max-env-step``) overrides the file's budgets."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"--suite {path}: no such file")
    suite = runpy.run_path(path).get('suite')
    if not isinstance(suite, (list, tuple)) or not suite:
        raise ConfigError(f"suite file {path} must define suite = [dict(config=..., max_env_step=...), ...]")
    here = os.path.dirname(os.path.abspath(path))
    entries = []
    for k, item in enumerate(suite):
        unknown = sorted(set(item) - set(SUITE_KEYS)) if isinstance(item, dict) else None
        if unknown is None or unknown or 'config' not in item:
            raise ConfigError(f"suite file {path}, entry {k}: " + (f"unknown keys {unknown}; " if unknown else '') +
                              f"an entry is a dict with 'config' and optionally {list(SUITE_KEYS[1:])}")
        config = item['config'] if os.path.isfile(item['config']) else os.path.join(here, item['config'])
        budget = max_env_step or item.get('max_env_step')
        if not budget:
            raise ConfigError(f"suite file {path}, entry {k} ({item['config']}): no max_env_step; give one there or "
                              f"--max-env-step")
        entries.append(Entry(config, item.get('name') or _stem(config), int(budget), dict(item.get('set') or {}),
                             item.get('reference')))
    return _unique(entries)


def entries_of(configs: list[str], max_env_step: int | None, overrides: dict[str, Any]) -> list[Entry]:
    """``-c CFG`` (repeatable) as suite entries, each at ``--max-env-step`` with the ``--set`` overrides."""
    if not max_env_step:
        raise ConfigError("ding_lite bench -c CFG needs --max-env-step N (each config's budget)")
    return _unique([Entry(c, _stem(c), int(max_env_step), dict(overrides)) for c in configs])


def bench(entries: list[Entry], seeds: list[int], out: str, ray: str | None = None,
          storage_path: str | None = None) -> list[dict[str, str]]:
    """Train each entry's seeds (skipping finished ones, resuming unfinished ones), then write ``results.csv``,
    ``results.md`` and the plots under ``out``; returns the rows. The runs (checkpoints, logs) live under
    ``storage_path`` (Ray's name; default ``out``). ``ray``: each entry's run a Ray task on the cluster at that
    address (``'local'``: a Ray started on this machine), the runs' folder one every node reaches."""
    runs = os.path.abspath(storage_path or out)
    todo = [entry for entry in entries if not _finished(entry, seeds, runs)]
    resources = _check(todo, seeds)
    os.makedirs(out, exist_ok=True)
    with life_cycle.continued_by(CONTINUED):
        for k, entry in enumerate(entries):
            print(f"bench {k + 1}/{len(entries)}: {entry.name}, seeds {_seeds_text(seeds)}, {entry.max_env_step} env "
                  f"steps" + ('' if entry in todo else f": finished before, skipped "
                              f"({_record(os.path.join(runs, entry.name))['wall_s']:.0f} s then)"), flush=True)
            if entry in todo and ray is None:
                try:
                    _train(entry, seeds, runs)
                except KeyboardInterrupt:
                    _say_stopped([entry], seeds, runs)
                    raise
                done = [e for e in entries if _finished(e, seeds, runs)]  # a long suite's results as they come
                _write([_row(e, seeds, runs) for e in done], out, runs, plots=False)
        if ray is not None and todo:
            _train_on_ray(ray, todo, seeds, runs, resources)
    rows = [_row(entry, seeds, runs) for entry in entries]
    _write(rows, out, runs, plots=bool(todo) or not os.path.exists(os.path.join(out, 'curves.png')))
    return rows


def _finished(entry: Entry, seeds: list[int], out: str) -> bool:
    """Whether the entry's record says it finished with these seeds and this budget."""
    record = _record(os.path.join(out, entry.name))
    return record is not None and record['seeds'] == seeds and record['max_env_step'] == entry.max_env_step


def _check(entries: list[Entry], seeds: list[int]) -> dict[str, dict[str, float]]:
    """Every config compiles with its overrides (a ``ConfigError`` naming the config) before anything trains; the
    resources each entry's run asks a cluster for (a CPU per learner thread, a GPU with ``policy.cuda``)."""
    from ..kit.config_input import compile_input
    from ..pipeline.seeds import seed_input
    resources = {}
    for entry in entries:
        if not os.path.isfile(entry.config):
            raise FileNotFoundError(f"bench: config {entry.config} does not exist")
        try:
            cfg = compile_input(seed_input(read_config(entry.config), seeds[0]), seeds[0], save_cfg=False,
                                overrides=entry.overrides)
        except (ConfigError, ValueError, TypeError) as error:
            raise ConfigError(f"bench: config {entry.config} ({entry.name}) does not compile: {error}") from error
        threads = cfg.policy.learn.learner.get('num_threads') or 1
        resources[entry.name] = {'num_cpus': float(threads), 'num_gpus': 1.0 if cfg.policy.get('cuda') else 0.0}
    return resources


def _train_on_ray(address: str, entries: list[Entry], seeds: list[int], out: str,
                  resources: dict[str, dict[str, float]]) -> None:
    """Each entry's run as a Ray task with its resources, as many at once as the cluster holds; a task whose node
    is lost runs again elsewhere (Ray's retries) and continues from its resume points in ``out``. Ctrl-C or SIGTERM
    tells the tasks to stop (``STOP_FILE``): each writes its resume points, and the driver waits for them, says
    what each kept and how to continue, and raises ``KeyboardInterrupt``."""
    ray = import_ray('bench --ray')
    join_ray(ray, address)
    stop = os.path.join(out, STOP_FILE)
    if os.path.exists(stop):  # an earlier driver's
        os.remove(stop)
    hint = os.environ['DING_LITE_RESUME_COMMAND']  # continued_by's: this command again
    task = ray.remote(max_retries=3, retry_exceptions=False)(_train_task)
    pending = {task.options(**resources[e.name]).remote(e, seeds, out, hint): e for e in entries}
    start = shown = time.perf_counter()
    with life_cycle.graceful_interrupt() as interrupted:
        while pending and not interrupted.is_set():
            done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)  # short: a signal is handled between
            if done:
                entry, result = pending.pop(done[0]), ray.get(done[0])
                moved = len(set(result['nodes'])) > 1
                print(f"  {entry.name} finished" + (f": moved after a lost node, ran on {len(set(result['nodes']))} "
                                                    f"nodes" if moved else ''), flush=True)
            elif time.perf_counter() - shown >= PROGRESS_EVERY:  # the live table: a line per config still running
                shown = time.perf_counter()
                for entry in pending.values():
                    print(_progress(entry, seeds, out, shown - start), flush=True)
        if not pending:
            return
        print(f"bench: stopping {len(pending)} run(s): each writes its resume points (Ctrl-C again: stop at once, "
              f"from the last ones written)", flush=True)
        atomic_write_text(stop, 'stop\n')
        ray.get(list(pending))
    os.remove(stop)
    _say_stopped(list(pending.values()), seeds, out)
    print(f"bench interrupted: continue it with: {hint}", flush=True)
    raise KeyboardInterrupt


def _say_stopped(entries: list[Entry], seeds: list[int], out: str) -> None:
    """What each stopped entry kept: its seeds' resume points (the env step they hold), or none yet."""
    for entry in entries:
        steps = [_resume_step(_run_dir(out, entry, seed)) for seed in seeds]
        kept = [f"seed {seed} at env step {step}" for seed, step in zip(seeds, steps) if step is not None]
        none = [str(seed) for seed, step in zip(seeds, steps) if step is None]
        print(f"  {entry.name}: " + (f"resume points kept ({', '.join(kept)})" if kept else "no resume point yet") +
              (f"; seed(s) {','.join(none)} start again" if none and kept else ': it starts again' if none else ''),
              flush=True)


def _resume_step(run_dir: str) -> int | None:
    """The env step of the run's resume point (``ckpt/latest``), or None where it has none."""
    latest = os.path.join(run_dir, 'ckpt', 'latest')
    if not os.path.isfile(latest):
        return None
    from ding_lite.worker.learner import load_checkpoint
    return int(load_checkpoint(os.path.join(run_dir, 'ckpt', open(latest).read().strip())).get('last_envstep', 0))


def _progress(entry: Entry, seeds: list[int], out: str, elapsed: float) -> str:
    """A running config's line: its env steps (the last evaluation's), each seed's latest return, an ETA."""
    latest = []
    for seed in seeds:
        path = os.path.join(_run_dir(out, entry, seed), 'log', 'evaluator.csv')
        rows = list(csv.DictReader(open(path))) if os.path.isfile(path) else []
        latest.append((int(rows[-1]['envstep']), float(rows[-1]['return_mean'])) if rows else None)
    steps = min((row[0] for row in latest if row is not None), default=0)
    returns = ' '.join('-' if row is None else f"{row[1]:.1f}" for row in latest)
    eta = f"{elapsed * (entry.max_env_step - steps) / steps:.0f} s" if steps else '-'
    return f"  {entry.name}: env step {steps}/{entry.max_env_step}, latest return per seed {returns}, ETA {eta}"


def _train_task(entry: Entry, seeds: list[int], out: str, hint: str) -> dict[str, Any]:
    """A Ray task: the entry's run, stopped as at Ctrl-C once the driver writes ``STOP_FILE`` (the run's messages
    name the driver's command, ``hint``); ``{'nodes': the nodes it has run on (a retried task's node is the second),
    'stopped': whether it was told to stop}``."""
    import ray
    stop = os.path.join(out, STOP_FILE)
    if os.path.exists(stop):  # the driver stopped before this task began
        return {'nodes': [], 'stopped': True}
    os.environ['DING_LITE_RESUME_COMMAND'] = hint
    life_cycle.ask_to_stop(False)  # a reused worker: no earlier task's request
    running = threading.Event()
    running.set()

    def watch() -> None:
        while running.is_set() and not os.path.exists(stop):
            time.sleep(0.5)
        if running.is_set():
            life_cycle.ask_to_stop()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        _train(entry, seeds, out, node=ray.get_runtime_context().get_node_id())
    except KeyboardInterrupt:
        return {'nodes': [t['node'] for t in _tries(os.path.join(out, entry.name))], 'stopped': True}
    finally:
        running.clear()
        watcher.join()
    return {'nodes': _record(os.path.join(out, entry.name))['nodes'], 'stopped': False}


def _train(entry: Entry, seeds: list[int], out: str, node: str | None = None) -> None:
    """The entry's seeds as one run (continued where it has resume points for these seeds); ``node``: where it
    runs. Each try's node and wall time go in ``tries.json``; the finished run's record (``bench.json``) adds up
    its tries."""
    from ..pipeline.serial import serial_pipeline
    folder = os.path.join(out, entry.name)
    record = _record(folder)
    # an interrupted run, or a finished one whose budget grew, continues from its resume points
    resume = (record is None or record['seeds'] == seeds and record['max_env_step'] < entry.max_env_step) and \
        all(os.path.exists(os.path.join(_run_dir(out, entry, s), 'ckpt', 'latest')) for s in seeds)
    if not resume and os.path.isdir(folder):  # other seeds, a smaller budget, or nothing to resume: afresh
        shutil.rmtree(folder)
    if resume:
        print("  continuing from its resume points", flush=True)
    tries = _tries(folder) + [{'node': node or 'local', 'wall_s': 0.0}]
    overrides = {'policy.learn.learner.hook.save_ckpt_after_eval': True, **entry.overrides,
                 'exp_name': os.path.join(folder, f"{entry.name}_seed{seeds[0]}")}
    start = time.perf_counter()
    try:
        _write_tries(folder, tries)
        serial_pipeline(entry.config, seed=list(seeds), max_env_step=entry.max_env_step, resume=resume,
                        overrides=overrides)
    finally:  # an interrupted try's wall time counts too
        tries[-1]['wall_s'] = time.perf_counter() - start
        _write_tries(folder, tries)
    atomic_write_text(os.path.join(folder, 'bench.json'), json.dumps(
        {'seeds': seeds, 'max_env_step': entry.max_env_step, 'wall_s': sum(t['wall_s'] for t in tries),
         'nodes': [t['node'] for t in tries]}))


def _tries(folder: str) -> list[dict[str, Any]]:
    """The entry's tries so far (``tries.json``, kept across interrupts and retried tasks): each one's node and wall
    time."""
    path = os.path.join(folder, 'tries.json')
    return json.load(open(path)) if os.path.isfile(path) else []


def _write_tries(folder: str, tries: list[dict[str, Any]]) -> None:
    os.makedirs(folder, exist_ok=True)
    atomic_write_text(os.path.join(folder, 'tries.json'), json.dumps(tries))


def _record(folder: str) -> dict[str, Any] | None:
    path = os.path.join(folder, 'bench.json')
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


def _run_dir(out: str, entry: Entry, seed: int) -> str:
    return os.path.join(out, entry.name, f"{entry.name}_seed{seed}")


def _row(entry: Entry, seeds: list[int], out: str) -> dict[str, str]:
    """The entry's results over its seeds' ``evaluator.csv``."""
    curves = [_evaluations(_run_dir(out, entry, s)) for s in seeds]
    final = np.array([rows[-1][1] for rows in curves])
    point, low, high = interval(final, statistic('iqm'))
    stop = read_config(os.path.join(_run_dir(out, entry, seeds[0]), 'total_config.py'))[0].env.get('stop_value')
    reached = [next((str(step) for step, value in rows if stop is not None and value >= stop), '-') for rows in curves]
    record = _record(os.path.join(out, entry.name)) or {}
    steps = sum(rows[-1][0] for rows in curves)
    wall = float(record.get('wall_s', 0.0))
    reference = entry.reference or {}
    return {'config': entry.name, 'seeds': _seeds_text(seeds), 'max_env_step': str(entry.max_env_step),
            'iqm': f"{point:.1f}", 'iqm_low': f"{low:.1f}", 'iqm_high': f"{high:.1f}", 'mean': f"{final.mean():.1f}",
            'median': f"{np.median(final):.1f}", 'final': ' '.join(f"{v:.1f}" for v in final),
            'stop_value': '-' if stop is None else f"{stop:g}", 'steps_to_stop': ' '.join(reached),
            'wall_s': f"{wall:.0f}", 'env_steps_per_s': f"{steps / wall:.0f}" if wall else '-',
            'reference': '' if reference.get('score') is None else f"{reference['score']:g}",
            'reference_source': str(reference.get('source', ''))}


def _evaluations(run_dir: str) -> list[tuple[int, float]]:
    path = os.path.join(run_dir, 'log', 'evaluator.csv')
    if not os.path.isfile(path):
        raise FileNotFoundError(f"bench: {path} is missing: the run did not evaluate")
    with open(path) as f:
        rows = [(int(r['envstep']), float(r['return_mean'])) for r in csv.DictReader(f)]
    if not rows:
        raise ValueError(f"bench: {path} has no evaluation")
    return rows


def _write(rows: list[dict[str, str]], out: str, runs: str, plots: bool = True) -> None:
    table = io.StringIO(newline='')
    writer = csv.DictWriter(table, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(os.path.join(out, 'results.csv'), table.getvalue())  # a crash leaves the last whole table
    head = ['config', 'seeds', 'env steps', 'IQM [95% CI]', 'mean', 'median', 'final per seed', 'to stop value',
            'wall (s)', 'env steps/s', 'reference']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + ' --- |' * len(head)]
    for r in rows:
        reference = f"{r['reference']} ({r['reference_source']})" if r['reference'] else ''
        cells = [r['config'], r['seeds'], r['max_env_step'], f"{r['iqm']} [{r['iqm_low']}, {r['iqm_high']}]",
                 r['mean'], r['median'], r['final'], f"{r['steps_to_stop']} (stop {r['stop_value']})", r['wall_s'],
                 r['env_steps_per_s'], reference]
        lines.append('| ' + ' | '.join(cells) + ' |')
    atomic_write_text(os.path.join(out, 'results.md'), '\n'.join(lines) + '\n')
    if plots:
        _plots(out, runs, rows)


def _plots(out: str, runs: str, rows: list[dict[str, str]]) -> None:
    """Learning curves (IQM band) and the suite's performance profile, where matplotlib is installed."""
    if importlib.util.find_spec('matplotlib') is None:
        print("bench: no plots (pip install matplotlib)")
        return
    from .plot import plot_curves, plot_profiles
    folders = [os.path.join(runs, r['config'], d) for r in rows
               for d in sorted(os.listdir(os.path.join(runs, r['config'])))
               if os.path.isdir(os.path.join(runs, r['config'], d))]
    plot_curves(folders, os.path.join(out, 'curves.png'), aggregate_name='iqm')
    plot_profiles(folders, os.path.join(out, 'profile.png'))


def _stem(config: str) -> str:
    name = os.path.splitext(os.path.basename(config))[0]
    return name[:-len('_config')] if name.endswith('_config') else name


def _unique(entries: list[Entry]) -> list[Entry]:
    names = [e.name for e in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"bench: configs named {twice} more than once; give each a 'name' of its own in the suite")
    return entries


def _seeds_text(seeds: list[int]) -> str:
    return ','.join(map(str, seeds))


__all__ = ['Entry', 'bench', 'entries_of', 'load_suite']
