"""Many seeds in one run: each seed its own run (folder, envs, buffer, evaluations, stop), one update for all.

The loop is the serial loop with every seed in lockstep: at each env step one ``SeedAxis`` forward acts for every
seed's envs (collecting and evaluating), one gather from the buffers' shared tensors (``SeedBuffers``) samples every
seed's batch, and one ``SeedAxis`` update learns from them. A seed that reaches its stop value (or its budget) is
finished at once (its folder is final) and leaves the axis; the run ends when every seed has.
"""
from __future__ import annotations

import contextlib
import copy
import re
import threading
import time
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import torch
from easydict import EasyDict
from torch import nn

from ding_lite.config import ConfigError, apply_overrides, read_config
from ding_lite.data.collate import Rows
from ding_lite.worker import SampleSerialCollector
from ding_lite.worker.collect_round import collect_batches
from ding_lite.worker.evaluator import run_episodes_together
from ding_lite.worker.logger import build_logger
from policy_zoo import Policy, get_policy_cls
from ..kit.config_input import compile_input, compile_run
from ..kit.cpu_threads import CpuThreads, learner_threads
from ..kit.life_cycle import RunProgress, graceful_interrupt, log_times, starting
from .seed_axis import why_not_vectorised
from .seed_group import SeedGroup
from ..kit.run_parts import random_collect_together, store
from ..kit.steps import already_finished, begin_run, build_serial, check_budget, collect_round, evaluate, \
    needs_warm_up, show_eval, store_round, train_reward_models, warm_up


def parse_seeds(text: str) -> list[int]:
    """``'0-4'`` -> ``[0, 1, 2, 3, 4]``, ``'0,3,7'`` -> ``[0, 3, 7]`` (ranges and lists mix: ``'0-2,9'``)."""
    seeds: list[int] = []
    for part in str(text).split(','):
        match = re.fullmatch(r'\s*(\d+)\s*(?:-\s*(\d+)\s*)?', part)
        if match is None or (match.group(2) is not None and int(match.group(2)) < int(match.group(1))):
            raise ValueError(f"seeds {text!r}: expected a range like 0-4, a list like 0,3,7, or both (0-2,9)")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        seeds.extend(range(low, high + 1))
    return check_seeds(seeds)


def check_seeds(seeds: Any) -> list[int]:
    """``seeds`` as a list of distinct non-negative ints, or a clear error."""
    seeds = list(seeds)
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of non-negative ints, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds {seeds} repeat a seed: each seed is its own run")
    return seeds


def seed_input(input_cfg: str | tuple | list, seed: int) -> tuple[EasyDict, EasyDict]:
    """The ``(main_config, create_config)`` of seed ``seed``: its ``exp_name`` ends in ``_seed<seed>``."""
    main, create = read_config(input_cfg) if isinstance(input_cfg, str) else copy.deepcopy(tuple(input_cfg))
    name = str(main.get('exp_name', 'default_experiment'))
    main.exp_name = name if re.fullmatch(r'.*_seed\d+', name) else f"{name}_seed{seed}"
    return main, create


Setup = Callable[..., tuple]  # (cfg, run, resume_path) -> (sample, after_collect or None)


def train_seeds(pipeline: Callable[..., Policy], input_cfg: str | tuple | list, seeds: Any, setup: Setup,
                name: str = 'seeds', **kwargs: Any) -> list[Policy]:
    """``pipeline`` (``serial_pipeline`` or ``serial_pipeline_sqil``, with its keyword arguments) over ``seeds``: one
    policy per seed, in seed order. Seeds of a policy ``SeedAxis`` can stack train as one run, each prepared by
    ``setup(cfg, run, resume_path) -> (sample, after_collect)``; others run one after another. ``name``: the
    pipeline whose declarations the stacked run is checked against (``PIPELINES``)."""
    seeds = check_seeds(seeds)
    if isinstance(input_cfg, str):  # read once: a config file is code, run once however many seeds it has
        input_cfg = read_config(input_cfg)
    reason, first = ('one seed', None) if len(seeds) == 1 else \
        _why_sequential(input_cfg, seeds, kwargs.get('overrides'), kwargs.get('env_setting'))
    if reason is None:
        names = ('env_setting', 'model', 'max_train_iter', 'max_env_step', 'resume', 'overrides')
        return serial_pipeline_seeds(input_cfg, seeds, setup, name=name, first=first,
                                     **{k: v for k, v in kwargs.items() if k in names})
    why = f"seeds {seeds} run one after another, not as one batched run: {reason}"
    if len(seeds) > 1:  # the console now; each seed's summary log once its folder exists (made by its own run)
        print(why, flush=True)
    policies = [pipeline(seed_input(input_cfg, seed), seed=seed, **kwargs) for seed in seeds]
    for seed in seeds if len(seeds) > 1 else []:  # (in the folder the seed's run wrote: --set exp_name counts)
        main = seed_input(apply_overrides(*seed_input(input_cfg, seed), kwargs.get('overrides') or {}), seed)[0]
        build_logger(main.exp_name, 'summary').info(why)
    return policies


def _why_sequential(input_cfg: Any, seeds: list[int], overrides: dict[str, Any] | None, env_setting: Any = None
                    ) -> tuple[str | None, EasyDict]:
    """Why the seeds cannot stack (None where they can), and the first seed's config, compiled unsaved (its policy
    type resolved: hybrid SAC on hybrid actions, which does not stack)."""
    cfg = compile_input(seed_input(input_cfg, seeds[0]), seeds[0], save_cfg=False, overrides=overrides,
                        env_setting=env_setting)
    return why_not_vectorised(get_policy_cls(cfg.policy), cfg.policy), cfg


def serial_pipeline_seeds(input_cfg: str | tuple | list, seeds: list[int], setup: Setup,
                          env_setting: list | None = None,
                          model: nn.Module | None = None, max_train_iter: int = int(1e10),
                          max_env_step: int = int(1e10), resume: bool | str = False,
                          overrides: dict[str, Any] | None = None, name: str = 'seeds',
                          first: EasyDict | None = None) -> list[Policy]:
    """Train ``seeds`` as one run of ``SeedAxis`` updates; seed k writes ``<exp_name>_seed<k>/`` as a single run
    would. ``model`` is copied for each seed; ``resume`` True continues every seed's folder. ``first``: the first
    seed's config compiled unsaved already (each seed's config is compiled once)."""
    rows = [(seed_input(input_cfg, seed), seed) for seed in seeds]
    return train_rows(rows, setup, env_setting, model, max_train_iter, max_env_step, resume, overrides, name=name,
                      compiled={seeds[0]: first} if first is not None else None)


def train_rows(rows: list[tuple[tuple, int]], setup: Setup, env_setting: list | None = None,
               model: nn.Module | None = None, max_train_iter: int = int(1e10), max_env_step: int = int(1e10),
               resume: bool | str = False, overrides: dict[str, Any] | None = None,
               prepare: Callable[[SimpleNamespace], None] | None = None, name: str = 'seeds',
               compiled: dict[int, EasyDict] | None = None, stop_rules: list[Any] | None = None) -> list[Policy]:
    """Train ``rows``, each a ``(main_config, create_config)`` pair and its seed (one config's seeds, or a search's
    trials, whose configs differ in ``ROW_SETTINGS`` at most), as one run of ``SeedAxis`` updates, each row in its
    own ``exp_name`` folder as a single run would; ``prepare(run)`` is called on each row's run once it is built;
    ``stop_rules``: each row's evaluator's other reason to stop (``InteractionSerialEvaluator``'s ``stop_rule``);
    ``name``: the pipeline (``PIPELINES``) whose declarations the rows are checked against; ``compiled``: rows'
    configs compiled unsaved already, by seed. ``model`` is copied for each row; ``resume`` True continues every
    row's folder."""
    if resume not in (True, False):
        raise ConfigError(f"resume={resume!r}: a run of many seeds resumes each seed's own folder; pass True")
    runs = []
    with contextlib.ExitStack() as stack:
        for k, (row_cfg, seed) in enumerate(rows):
            cfg, resume_path = compile_run(row_cfg, seed, resume, overrides, pipeline=name,
                                           compiled=(compiled or {}).get(seed), env_setting=env_setting)
            with starting(cfg, resume_path):
                # one forward acts for every seed's envs: collection stays in this process
                run = build_serial(cfg, env_setting, copy.deepcopy(model), save_cfg=resume_path is None,
                                   overlap=False, stop_rule=(stop_rules or [None] * len(rows))[k])
            run.rng = torch.get_rng_state()  # the seed's stream, where a single run's starts (after its set-up)
            stack.callback(lambda closables=run.closables: [c.close() for c in closables])
            with starting(cfg, resume_path):
                run.cfg = cfg
                check_budget(cfg, max_env_step)
                run.sample, run.after_collect = setup(cfg, run, resume_path)
                if resume_path:
                    run.learner.resume(resume_path)
            if prepare is not None:
                prepare(run)
            runs.append(run)
        with learner_threads(runs[0].cfg, stacked=len(runs)) as threads:
            _train(runs, max_train_iter, max_env_step, threads)
    return [run.policy for run in runs]


def _train(runs: list[SimpleNamespace], max_train_iter: int, max_env_step: int, threads: CpuThreads) -> None:
    """Every seed's warm-up, then rounds of {evaluate, collect, push} per seed and one stacked learn round."""
    for run in runs:
        run.max_train_iter = begin_run(run.cfg, run, max_train_iter, max_env_step)
        run.logged = run.learner.train_iter
    seeds = SeedGroup(runs)
    with graceful_interrupt() as interrupted:
        _warm_up(runs)
        first = runs[0]
        kind = 'seeds' if len({re.sub(r'_seed\d+$', '', run.cfg.exp_name) for run in runs}) == 1 else 'rows'
        name = re.sub(r'_seed\d+$', '', first.cfg.exp_name) + f' ({len(runs)} {kind})' if len(runs) > 1 else None
        with RunProgress(first.cfg, first.collector.envstep, max_env_step, lambda: first.learner.train_iter,
                         name=name, max_train_iter=max(run.max_train_iter for run in runs)) as bar:
            returns: dict[int, str] = {}
            bars = {id(run): _SeedBar(bar, run, returns) for run in runs}
            for run in [r for r in runs if _had_stopped(r) or
                        already_finished(r.cfg, r, r.collector.envstep, max_env_step, r.max_train_iter)]:
                # a resumed seed that had ended stays so
                seeds.finish(run, interrupted, run.loop.ended or ('stop_value' if _had_stopped(run) else 'budget'))
            for run in seeds.active:
                run.loop.ended = None  # running again: its resume points are an unfinished run's
            while seeds.active and not interrupted.is_set():
                _collect_round(seeds, bars, interrupted)
                _learn_round(seeds, interrupted)
                for run in seeds.active:
                    _log_times(run)
                used = [run for run in seeds.active if _finished(run, max_env_step)]
                stopped = _final_evaluations(seeds, used, bars) if used and not interrupted.is_set() else []
                for run in used:
                    seeds.finish(run, interrupted, 'stop_value' if any(run is s for s in stopped) else 'budget')
                threads.check()
        for run in list(seeds.active):
            seeds.finish(run, interrupted)
    if interrupted.is_set():
        raise KeyboardInterrupt


def _warm_up(runs: list[SimpleNamespace]) -> None:
    """Every seed's warm-up: their envs stepped together where the seeds' collectors are plain, their warm-ups
    alike and their random actions draw nothing from torch (envs in processes of their own then step at once);
    else one seed after another, each on its own stream."""
    due = [run for run in runs if needs_warm_up(run.cfg, run)]
    together = len(due) > 1 and len({run.cfg.policy.random_collect_size for run in due}) == 1 and all(
        type(run.collector) is SampleSerialCollector and not getattr(run.policy.collect_mode, 'memory', None)
        for run in due)
    if not together:
        for run in runs:
            with _stream(run):
                warm_up(run.cfg, run)
        return
    with _phase(due, 'collect'):
        batches = random_collect_together([run.collector for run in due], [run.policy.collect_mode for run in due],
                                          due[0].cfg.policy.random_collect_size,
                                          [run.collector_env for run in due], [run.cfg.seed for run in due])
        for run, batch in zip(due, batches):
            store(run.cfg, run, batch)


@contextlib.contextmanager
def _stream(run: SimpleNamespace) -> Iterator[None]:
    """torch's generator on the seed's own stream while the seed acts alone (its warm-up; its rounds where the
    seeds cannot share a forward): its draws are as if it ran alone, whatever the other seeds draw (the shared
    forwards and the stacked update draw for all seeds from the run's stream)."""
    shared = torch.get_rng_state()
    torch.set_rng_state(run.rng)
    try:
        yield
    finally:
        run.rng = torch.get_rng_state()
        torch.set_rng_state(shared)


def _finished(run: SimpleNamespace, max_env_step: int) -> bool:
    return run.collector.envstep >= max_env_step or run.learner.train_iter >= run.max_train_iter


def _had_stopped(run: SimpleNamespace) -> bool:
    """A resumed seed whose last evaluation had reached its stop value: final, as it was."""
    last = run.evaluator.last_info.get('return_mean')
    return run.learner.last_resume_point is not None and last is not None and last >= run.evaluator.stop_value


class _SeedBar:
    """One seed's handle on the run's one progress bar (tqdm's ``n``, ``update``, ``set_postfix``): the bar counts
    the env steps of the seed furthest along, and its eval return shows every seed's last one."""

    def __init__(self, bar: RunProgress, run: SimpleNamespace, returns: dict[int, str]) -> None:
        self._bar, self._seed, self.n, self._returns = bar, run.cfg.seed, run.collector.envstep, returns
        returns[self._seed] = '-'

    def update(self, steps: int) -> None:
        self.n += steps
        if self.n > self._bar.n:
            self._bar.update(self.n - self._bar.n)

    def set_postfix(self, eval_return: str | None = None) -> None:
        self._returns[self._seed] = eval_return or '-'
        shown = self._returns if len(self._returns) > 1 else None
        self._bar.set_postfix(eval_return=' '.join(f"seed{k} {v}" for k, v in shown.items()) if shown else eval_return)


def _collect_round(seeds: SeedGroup, bars: dict[int, _SeedBar], interrupted: threading.Event) -> None:
    """Each seed due a collect round: its evaluation if due, then its collection. Where the seeds share an axis,
    one eval forward and one collect forward act for every seed's envs at each env step (``SeedGroup.joint``); else
    each seed runs its round alone, on its own random stream."""
    due = [run for run in seeds.active if run.loop.updates_left == 0]
    evaluating = [run for run in due if run.evaluator.should_eval(run.learner.train_iter)] \
        if seeds.joint(due) else []  # (else each seed's collect_round evaluates it)
    if evaluating:
        for run in _evaluate_together(seeds, evaluating, bars):
            seeds.finish(run, interrupted, 'stop_value')
    collecting = [run for run in due if any(run is active for active in seeds.active)]
    if not seeds.joint(collecting):  # (or seeds that stopped left one)
        for run in collecting:
            with _stream(run):
                stop = collect_round(run.cfg, run, run.after_collect, bars.get(id(run)))
            if stop:
                seeds.finish(run, interrupted, 'stop_value')
        return
    with _phase(collecting, 'collect'):
        batches = collect_batches([run.collector for run in collecting], collecting[0].cfg.policy.collect.n_sample,
                                  collecting[0].learner.train_iter, forward=seeds.forward('collect', collecting),
                                  together=seeds.together)
    pushed = seeds.push(collecting, batches)
    for run, batch in zip(collecting, batches):
        store_round(run.cfg, run, batch, run.after_collect, bars.get(id(run)), pushed)


def _evaluate_together(seeds: SeedGroup, runs: list[SimpleNamespace], bars: dict[int, _SeedBar]
                       ) -> list[SimpleNamespace]:
    """One evaluation of each of ``runs`` (seeds that share an axis) through one eval forward per env step; the runs
    that reached their stop value."""
    with _phase(runs, 'eval'):
        returns = run_episodes_together([run.evaluator for run in runs], seeds.forward('eval', runs))
        stopped = []
        for run, seed_returns in zip(runs, returns):
            stop, info = run.evaluator.record(seed_returns, run.learner.save_checkpoint, run.learner.train_iter,
                                              run.collector.envstep, run.evaluator.episode_metrics)
            run.learner.evaluated()
            show_eval(bars.get(id(run)), info)
            stopped += [run] if stop else []
    return stopped


def _final_evaluations(seeds: SeedGroup, runs: list[SimpleNamespace], bars: dict[int, _SeedBar]
                       ) -> list[SimpleNamespace]:
    """The last weights of seeds that used their budget, evaluated (together where they share an axis; a seed
    evaluated at this iteration already is not again); the seeds that reached their stop value."""
    due = [run for run in runs if run.evaluator.should_eval(run.learner.train_iter, at_end=True)]
    if seeds.joint(due):
        return _evaluate_together(seeds, due, bars)
    stopped = []
    for run in due:
        with _stream(run):
            stopped += [run] if evaluate(run, bars.get(id(run))) else []
    return stopped


@contextlib.contextmanager
def _phase(runs: list[SimpleNamespace], name: str) -> Iterator[None]:
    """Every seed's ``name`` phase timed as the one shared step's (timed once)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - start
        for run in runs:
            run.timer.add(name, seconds)


def _learn_round(seeds: SeedGroup, interrupted: threading.Event) -> None:
    """The seeds' learn steps of this round in lockstep (they collect alike); a seed whose buffer holds less than
    a batch ends its round, as a single run's does."""
    while not interrupted.is_set():
        ready = []
        for run in [run for run in seeds.active if run.loop.updates_left > 0]:
            run.loop.updates_left -= 1  # first: a checkpoint written by this step's hooks counts it as done
            if run.buffer.count() < run.cfg.policy.learn.batch_size:
                run.loop.updates_left = 0
                continue
            ready.append(run)
        if not ready:
            return
        _param_resets(seeds, ready)
        with _phase(ready, 'learn'):
            batches = seeds.sample(ready, ready[0].cfg.policy.learn.batch_size)
            outputs = seeds.update(ready, batches)
            for k, (run, output) in enumerate(zip(ready, outputs)):
                run.output = output
                batch = batches[k] if isinstance(batches, list) else Rows(batches, k)  # (cut as read)
                train_reward_models(run.cfg, run, run.sample)  # (a row with reward signals trains alone)
                run.learner.train(batch, run.collector.envstep)


def _param_resets(seeds: SeedGroup, runs: list[SimpleNamespace]) -> None:
    """Before the stacked update, the parameter resets due at each seed's env step: the seeds get their own tensors,
    each resets on its own random stream (its fresh networks drawn as if it ran alone), and they stack again."""
    due = [run for run in runs if run.policy.resets.due(run.collector.envstep)]
    if due:
        seeds.unstack()
        for run in due:
            with _stream(run):
                run.learner.param_reset(run.collector.envstep)


def _log_times(run: SimpleNamespace) -> None:
    log_freq = run.cfg.policy.learn.learner.hook.log_show_after_iter
    if log_freq and run.learner.train_iter - run.logged >= log_freq:
        run.logged = run.learner.train_iter
        log_times(run.cfg, run.tb_logger, run.logged, run.timer.report(run.collector.envstep, run.logged),
                  run.collector.envstep)
