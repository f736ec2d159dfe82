"""One seed's serial run: {evaluate, collect, store, learn} until the stop value or a limit, with the life cycle
around it (warm-up, progress, Ctrl-C, resume point, summary)."""
from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, Callable

from easydict import EasyDict
from torch import nn

from ding_lite.data import Batch
from policy_zoo import Policy
from ..kit.config_input import compile_run
from ..kit.cpu_threads import CpuThreads, learner_threads
from ..kit.life_cycle import RunProgress, after_run, closing, graceful_interrupt, log_times, naming_resume_point, \
    starting, summarise
from ..kit.steps import already_finished, begin_run, build_serial, check_budget, collect_round, final_evaluation, \
    learn_sampler, train_reward_models, warm_up


def train_one(input_cfg: str | tuple | list, seed: int | None = None, env_setting: list | None = None,
              model: nn.Module | None = None, max_train_iter: int = int(1e10), max_env_step: int = int(1e10),
              resume: bool | str = False, overrides: dict[str, Any] | None = None) -> Policy:
    """``serial_pipeline`` for one seed (its arguments); returns the trained policy."""
    cfg, resume_path = compile_run(input_cfg, seed, resume, overrides, env_setting=env_setting)
    with starting(cfg, resume_path):
        run = build_serial(cfg, env_setting, model, save_cfg=resume_path is None)
    with closing(run):
        with starting(cfg, resume_path):
            check_budget(cfg, max_env_step)
            sample = learn_sampler(cfg, run.buffer, run.collector_env.env_ref, run.policy)
            if resume_path:
                run.learner.resume(resume_path)
        train_serial(cfg, run, sample, max_train_iter, max_env_step)
    return run.policy


def train_serial(cfg: EasyDict, run: SimpleNamespace, sample: Callable[[int], Batch | None], max_train_iter: int,
                 max_env_step: int, after_collect: Callable[[], None] | None = None) -> None:
    """Random warm-up, then {evaluate, collect, push, train} until a stop; then checkpoint and summarise. Ctrl-C
    (or SIGTERM) stops at the next learn step with a resume point, then raises ``KeyboardInterrupt``."""
    learner, collector = run.learner, run.collector
    max_train_iter = begin_run(cfg, run, max_train_iter, max_env_step)
    # an overlapped run's collecting process counts as another process's load: reserving it a core made HalfCheetah's
    # 2-core run slower (85 against 107 env steps/s), since it is busy a fraction of the time
    with graceful_interrupt() as interrupted, naming_resume_point(learner), learner_threads(cfg) as threads:
        warm_up(cfg, run)
        with RunProgress(cfg, collector.envstep, max_env_step, lambda: learner.train_iter,
                         max_train_iter=max_train_iter) as progress:
            ended = _train_loop(cfg, run, sample, (max_train_iter, max_env_step), after_collect, progress,
                                interrupted, threads)
        run.loop.ended = run.loop.ended if interrupted.is_set() else ended
        after_run(cfg, learner, interrupted.is_set())
    summarise(cfg, learner, collector.envstep, run.evaluator, interrupted=interrupted.is_set())
    if interrupted.is_set():
        raise KeyboardInterrupt


def _train_loop(cfg: EasyDict, run: SimpleNamespace, sample: Callable[[int], Batch | None], limits: tuple[int, int],
                after_collect: Callable[[], None] | None, progress: RunProgress, interrupted: threading.Event,
                threads: CpuThreads) -> str | None:
    """The loop; how the run ended: ``'stop_value'``, ``'budget'``, or None (interrupted)."""
    learner, collector, loop = run.learner, run.collector, run.loop
    max_train_iter, max_env_step = limits

    def finished() -> bool:
        return collector.envstep >= max_env_step or learner.train_iter >= max_train_iter

    if already_finished(cfg, run, collector.envstep, max_env_step, max_train_iter):  # nothing evaluated again
        return run.loop.ended or final_evaluation(run, progress)  # (or killed before its last evaluation)
    loop.ended = None  # running again (a raised budget): its resume points are an unfinished run's
    timer, log_freq, logged = run.timer, cfg.policy.learn.learner.hook.log_show_after_iter, learner.train_iter
    done = False
    while not done and not interrupted.is_set():
        # else a resumed run finishes the round its checkpoint fell in
        if loop.updates_left == 0 and collect_round(cfg, run, after_collect, progress):
            return 'stop_value'
        with timer.phase('learn'):
            _learn_round(cfg, run, sample, interrupted)
        if log_freq and learner.train_iter - logged >= log_freq:  # the timing at the learner's log rate
            logged = learner.train_iter
            log_times(cfg, run.tb_logger, logged, timer.report(collector.envstep, logged), collector.envstep)
        threads.check()
        done = finished()
    return final_evaluation(run, progress) if done else None


def _learn_round(cfg: EasyDict, run: SimpleNamespace, sample: Callable[[int], Batch | None],
                 interrupted: threading.Event) -> None:
    """The learn steps left of this collect round (fewer while the buffer holds less than a batch), until an
    interrupt: the loop's ``updates_left`` then tells a resume where the round stood."""
    batch_size, loop = cfg.policy.learn.batch_size, run.loop
    while loop.updates_left > 0 and not interrupted.is_set():
        loop.updates_left -= 1  # first: a checkpoint written by this step's hooks counts it as done
        batch = sample(batch_size) if run.buffer.count() >= batch_size else None
        if batch is None:
            loop.updates_left = 0
            break
        train_reward_models(cfg, run, sample)  # before: this step's checkpoint holds them trained
        run.learner.train(batch, run.collector.envstep)
