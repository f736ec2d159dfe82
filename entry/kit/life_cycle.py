"""A run's life cycle, shared by the serial and parallel pipelines: set-up that leaves nothing behind, a graceful
interrupt, a sign of life (a bar on a terminal, plain lines elsewhere), closing, and the summary."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import shutil
import signal
import sys
import threading
import time
import uuid
from types import SimpleNamespace
from typing import Any, Callable, Iterator, TextIO

from easydict import EasyDict
from tqdm import tqdm

from ding_lite.utils.checkpoint import atomic_write_text
from ding_lite.worker import BaseLearner, InteractionSerialEvaluator, NonFiniteEnvError
from ding_lite.worker.logger import build_logger, format_scalars, write_scalars

LINE_SECONDS = 60.0  # without a terminal, a progress line at least this often
LONG_SECONDS = 1800.0  # a run with no budget still short of its stop value after this long says so
COMMAND: list[str] | None = None  # the command line that started the run (set by the CLI), for resume hints


def resume_hint(cfg: EasyDict) -> str:
    """How to continue exactly ``cfg``'s run (its folder): the CLI command it was started with, resuming that
    folder (a run of many seeds: ``--resume``, each seed its own); or the Python call."""
    if os.environ.get('DING_LITE_RESUME_COMMAND'):  # a wrapper's own (make demo's): {run} is the folder
        return f"continue it with: {os.environ['DING_LITE_RESUME_COMMAND'].replace('{run}', cfg.exp_name)}"
    if COMMAND is None:
        return f"continue it with the same call and resume={cfg.exp_name!r}"
    command = _without_resume(COMMAND)
    command += ['--resume'] if '--seeds' in command else ['--resume', cfg.exp_name]
    return f"continue it with: {shlex.join(command)}"


@contextlib.contextmanager
def continued_by(note: str = '', instead: str | None = None) -> Iterator[None]:
    """Runs started by a larger command (bench, tune): an interrupted run's hint is that command again (``note``
    appended), not the run's own ``--resume``; ``instead``: a hint of its own. A wrapper's hint already set is kept."""
    if os.environ.get('DING_LITE_RESUME_COMMAND'):
        yield
        return
    command = shlex.join(_without_resume(COMMAND)) if COMMAND else 'the same call'
    os.environ['DING_LITE_RESUME_COMMAND'] = instead if instead is not None else command + note
    try:
        yield
    finally:
        del os.environ['DING_LITE_RESUME_COMMAND']


def _without_resume(command: list[str]) -> list[str]:
    """``command`` less its ``--resume`` (and the folder or checkpoint given to it)."""
    kept, skip = [], False
    for k, word in enumerate(command):
        if skip:
            skip = False
        elif word == '--resume':
            skip = k + 1 < len(command) and not command[k + 1].startswith('-')
        elif not word.startswith('--resume='):
            kept.append(word)
    return kept


@contextlib.contextmanager
def starting(cfg: EasyDict, resume_path: str | None) -> Iterator[None]:
    """The set-up of a run: if it fails (bad input), a new run's folder, which ``compile_config`` made for this
    run alone, is removed, so nothing is left behind; a resumed run's folder is left as it was."""
    try:
        yield
    except BaseException:
        if resume_path is None:
            shutil.rmtree(cfg.exp_name, ignore_errors=True)
        raise


@contextlib.contextmanager
def closed_on_error(closables: list[Any]) -> Iterator[list[Any]]:
    """Set-up that may fail after it opened envs, loggers or a tracker: the (growing) list ``closables`` is closed
    if the block raises, and left open otherwise (``closing`` then owns it)."""
    try:
        yield closables
    except BaseException:
        for closable in closables:
            closable.close()
        raise


@contextlib.contextmanager
def closing(run: SimpleNamespace) -> Iterator[SimpleNamespace]:
    """Close every env, worker and logger of ``run`` (``run.closables``) however the block ends."""
    try:
        yield run
    finally:
        for closable in run.closables:
            closable.close()


_RUNNING: set[threading.Event] = set()  # the interrupt events of the runs in progress in this process
_STOP_ASKED = threading.Event()  # asked from outside (a bench driver): runs stop, and runs that start stop at once


def ask_to_stop(asked: bool = True) -> None:
    """Stop this process's runs as Ctrl-C does, from any thread (a Ray task told by its driver): each stops at its
    next learn step with a resume point, and a run that starts later at its first. ``False`` withdraws the request
    (a new task in a reused worker)."""
    if not asked:
        _STOP_ASKED.clear()
        return
    _STOP_ASKED.set()
    for event in list(_RUNNING):
        event.set()


@contextlib.contextmanager
def graceful_interrupt() -> Iterator[threading.Event]:
    """Ctrl-C or SIGTERM (a cluster scheduler's), or ``ask_to_stop``, sets the yielded event: the loop stops at its
    next learn step and writes a resume point. A second Ctrl-C interrupts at once, the previous resume point intact.
    The signals only in the main thread, where signal handlers live."""
    interrupted = threading.Event()
    _RUNNING.add(interrupted)
    if _STOP_ASKED.is_set():
        interrupted.set()
    try:
        with _signals_set(interrupted):
            yield interrupted
    finally:
        _RUNNING.discard(interrupted)


@contextlib.contextmanager
def _signals_set(interrupted: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``interrupted`` (a second SIGINT raises ``KeyboardInterrupt``), in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if interrupted.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        interrupted.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class RunProgress:
    """The run's sign of life: on a terminal a tqdm bar of env steps with the last evaluation return; elsewhere
    (a log file, a cluster job) a plain line on stderr at each evaluation and at least once a minute: env steps,
    iteration, last eval return, env steps/s, with an env-step budget the time left to it. A run with no budget
    (neither ``max_env_step`` nor ``max_train_iter``) that has not reached its stop value after ``LONG_SECONDS``
    says so on both. Takes tqdm's ``n``, ``update`` and ``set_postfix``."""

    def __init__(self, cfg: EasyDict, envstep: int, max_env_step: int, train_iter: Callable[[], int],
                 stream: TextIO | None = None, name: str | None = None, max_train_iter: int | None = None) -> None:
        self._stream = stream or sys.stderr
        self._tty = bool(getattr(self._stream, 'isatty', lambda: False)())
        total = max_env_step if max_env_step < int(1e10) else None
        self._total = total
        self.name = name or cfg.exp_name
        self._bar = tqdm(total=total, initial=envstep, unit='step', desc=self.name, dynamic_ncols=True,
                         disable=not self._tty, file=self._stream)
        self._train_iter, self._eval_return = train_iter, None
        self.n = envstep
        self._start, self._start_step = time.monotonic(), envstep
        self._last_line, self._evaluated = self._start, False
        no_budget = max_env_step >= int(1e10) and (max_train_iter is None or max_train_iter >= int(1e10))
        self._no_budget = (cfg.get('env') or {}).get('stop_value') if no_budget else None

    def _note(self) -> str:
        """What a run with no budget, still going after ``LONG_SECONDS``, says (nothing otherwise)."""
        minutes = (time.monotonic() - self._start) / 60
        if self._no_budget is None or minutes * 60 < LONG_SECONDS:
            return ''
        return (f"; stop value {self._no_budget} not reached after {minutes:.0f} min and no budget set: "
                f"--max-env-step N ends it")

    def _eta(self, speed: float) -> str:
        """With an env-step budget, the time left to it at this run's speed so far (nothing before a speed)."""
        if self._total is None or speed <= 0 or self.n >= self._total:
            return ''
        seconds = (self._total - self.n) / speed
        left = f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.0f} min" if seconds < 5400 else \
            f"{seconds / 3600:.1f} h"
        return f", {left} left"

    def update(self, steps: int) -> None:
        if self._evaluated:  # at the env step it evaluated at
            self._line()
        self.n += steps
        self._bar.update(steps)
        if not self._tty and time.monotonic() - self._last_line >= LINE_SECONDS:
            self._line()

    def set_postfix(self, eval_return: str | None = None) -> None:
        """A new evaluation: its line is printed at the next ``update`` (or ``close``), so the evaluations of one
        round (many seeds) share one line."""
        note = self._note()
        self._bar.set_postfix(eval_return=eval_return, **({'note': note[2:]} if note else {}), refresh=False)
        self._eval_return, self._evaluated = eval_return, not self._tty

    def _line(self) -> None:
        now = time.monotonic()
        speed = (self.n - self._start_step) / max(now - self._start, 1e-9)
        rate = f"{speed:.0f}" if self.n > self._start_step else '-'
        print(f"[{time.strftime('%H:%M:%S')}] {self.name}: env step {self.n}, iteration {self._train_iter()}, "
              f"eval return {self._eval_return or '-'}, {rate} env steps/s{self._eta(speed)}{self._note()}",
              file=self._stream, flush=True)
        self._last_line, self._evaluated = now, False

    def close(self) -> None:
        if self._evaluated:
            self._line()
        self._bar.close()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class PhaseTimer:
    """Where a run's wall time goes: ``with timer.phase('collect'): ...``, and ``report`` (since the last one) gives
    each phase's share of the wall time (``collect``, ``learn``, ``eval``, the rest as ``other``), ``env_steps_per_s``
    and ``updates_per_s``."""

    PHASES = ('collect', 'learn', 'eval')

    def __init__(self, envstep: int, train_iter: int) -> None:
        self._mark = (time.perf_counter(), envstep, train_iter)
        self._spent = dict.fromkeys(self.PHASES, 0.0)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        """``seconds`` spent in phase ``name`` (timed once for many runs: a run of many seeds' shared step)."""
        self._spent[name] += seconds

    def report(self, envstep: int, train_iter: int) -> dict[str, float]:
        now = time.perf_counter()
        since, envstep_then, iter_then = self._mark
        wall = max(now - since, 1e-9)
        shares = {name: spent / wall for name, spent in self._spent.items()}
        shares['other'] = max(0.0, 1.0 - sum(shares.values()))
        self._mark, self._spent = (now, envstep, train_iter), dict.fromkeys(self.PHASES, 0.0)
        return shares | {'env_steps_per_s': (envstep - envstep_then) / wall,
                         'updates_per_s': (train_iter - iter_then) / wall}


@contextlib.contextmanager
def resume_point_on(learner: BaseLearner, errors: tuple[type[BaseException], ...], cfg: EasyDict) -> Iterator[None]:
    """On one of ``errors`` (raised between learn steps, so the learn state is whole: an actor that cannot be
    replaced, a lost connection), write ``ckpt_last.pth.tar`` as a resume point before the error goes on."""
    try:
        yield
    except errors as error:
        logger = build_logger(cfg.exp_name, 'summary', console=True)
        try:
            path = learner.save_checkpoint('ckpt_last.pth.tar', resume_point=True)
        except Exception as failed:  # the error that stopped the run stays the one reported
            logger.info(f"{type(error).__name__} stopped the run, and no resume point could be written "
                        f"({type(failed).__name__}: {failed}); the last one: {learner.last_resume_point}")
        else:
            logger.info(f"{type(error).__name__} stopped the run at env step {learner.last_envstep}: {path} is a "
                        f"resume point; {resume_hint(cfg)}")
        raise


@contextlib.contextmanager
def naming_resume_point(learner: BaseLearner) -> Iterator[None]:
    """A ``NonFiniteEnvError`` (an env's NaN, caught before it was stored) goes on naming the run's last resume
    point: the run can continue from there once the env is fixed."""
    try:
        yield
    except NonFiniteEnvError as error:
        raise NonFiniteEnvError(f"{error}. Last resume point: {learner.last_resume_point or 'none yet'}") from None


def log_times(cfg: EasyDict, tb_logger: Any, train_iter: int, times: dict[str, float], envstep: int) -> None:
    """A ``PhaseTimer`` report to tensorboard (``time/*``, and a tracker) and ``log/time.txt``."""
    write_scalars(tb_logger, 'time', times, envstep)
    build_logger(cfg.exp_name, 'time').info(format_scalars(f"iter {train_iter}", times))


class Tracker:
    """A Weights & Biases run for ``logger.wandb`` (``--track``): the compiled config and run name at the start,
    then every scalar tensorboard gets (``write_scalars``). Its id is kept in ``log/wandb_run_id``, so a resumed
    run continues the same W&B run. ``close`` finishes it."""

    def __init__(self, cfg: EasyDict) -> None:
        try:
            import wandb
        except ImportError:
            raise ImportError("experiment tracking (logger.wandb, --track) needs wandb: pip install "
                              "'ding-lite[track]' (or pip install wandb)") from None
        settings, id_file = cfg.logger.wandb, os.path.join(cfg.exp_name, 'log', 'wandb_run_id')
        run_id = open(id_file).read().strip() if os.path.isfile(id_file) else uuid.uuid4().hex[:8]
        os.makedirs(os.path.dirname(id_file), exist_ok=True)
        atomic_write_text(id_file, run_id)
        self.run = wandb.init(project=settings.project or 'ding_lite', entity=settings.entity, mode=settings.mode,
                              dir=cfg.exp_name, id=run_id, resume='allow', name=os.path.basename(cfg.exp_name),
                              config=json.loads(json.dumps(cfg, default=str)))

    def log(self, scalars: dict[str, float]) -> None:
        self.run.log(scalars)

    def close(self) -> None:
        self.run.finish()


def start_tracker(cfg: EasyDict) -> Tracker | None:
    """The run's ``Tracker`` where ``logger.wandb`` asks for one (``track``, or a ``project`` set), else None."""
    settings = cfg.logger.wandb
    return Tracker(cfg) if settings.track or settings.project else None


def after_run(cfg: EasyDict, learner: BaseLearner, interrupted: bool) -> None:
    """The learner's after-run hooks, and after Ctrl-C always a resume point (with or without those hooks)."""
    learner.call_hook('after_run')
    if interrupted and not cfg.policy.learn.learner.hook.save_ckpt_after_run:
        learner.save_checkpoint('ckpt_last.pth.tar', resume_point=True)


def summarise(cfg: EasyDict, learner: BaseLearner, envstep: int, evaluator: InteractionSerialEvaluator,
              pipeline: str = 'serial', interrupted: bool = False) -> logging.Logger:
    """Print (and log to ``summary.txt``) where the run ended and where its files are (after an interrupt, how to
    continue it); returns that logger."""
    logger = build_logger(cfg.exp_name, 'summary', console=True)
    last = evaluator.last_info.get('return_mean', float('nan'))
    logger.info(f"{'interrupted' if interrupted else 'finished'} {cfg.exp_name}: {envstep} env steps, "
                f"{learner.train_iter} train iterations, last eval return {last:.2f} (best "
                f"{evaluator.best_return:.2f}, stop value {evaluator.stop_value})")
    logger.info(f"logs: {cfg.exp_name}/log/ (evaluator.csv, tensorboard: {pipeline}/)  "
                f"checkpoints: {cfg.exp_name}/ckpt/")
    if interrupted:
        logger.info(f"interrupted: {learner.last_resume_point} is a resume point; {resume_hint(cfg)}")
    return logger
