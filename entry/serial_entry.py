"""The serial off-policy pipeline: collect, store, learn, evaluate, until the stop value or a limit."""
from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, Callable

from easydict import EasyDict
from torch import nn

from ding_lite.config import ConfigError
from ding_lite.data import Batch, ReplayBuffer, demo_buffer, mixed_sampler
from ding_lite.registry import BUFFER_REGISTRY
from ding_lite.utils import set_deterministic, set_pkg_seed
from ding_lite.worker import BaseLearner, InteractionSerialEvaluator, create_learner, create_serial_collector
from ding_lite.worker.logger import build_logger, build_tb_logger
from policy_zoo import Policy, get_policy_cls
from envs import get_vec_env_setting
from .env_check import first_step, fit_model_to_env
from .run import PhaseTimer, RunProgress, after_run, closed_on_error, closing, graceful_interrupt, log_times, \
    naming_resume_point, start_tracker, starting, summarise
from .cpu_threads import CpuThreads, learner_threads
from .utils import build_envs, collect_batch, compile_run, create_run_policy, random_collect, store


def serial_pipeline(input_cfg: str | tuple | list, seed: int | list[int] | None = None,
                    env_setting: list | None = None, model: nn.Module | None = None, max_train_iter: int = int(1e10),
                    max_env_step: int = int(1e10), resume: bool | str = False,
                    overrides: dict[str, Any] | None = None) -> Policy | list[Policy]:
    """Train the config's policy serially; returns the trained policy (DI-engine's signature).

    ``seed`` a list (``[0, 1, 2, 3, 4]``) trains those seeds as one batched run, each in its own
    ``<exp_name>_seed<N>/``, and returns their policies in seed order (``entry.serial_seeds``).

    ``input_cfg`` is a config file path or a ``(main_config, create_config)`` pair; ``env_setting`` an optional
    ``(env_fn, collector_env_cfgs, evaluator_env_cfgs)`` replacing the registered env. With
    ``policy.other.offline_buffer.path`` set, each batch mixes that file's transitions (real rewards) at ``ratio``.
    ``seed`` None runs the config's own seed (a saved ``total_config.py`` records it), else 0. ``resume`` True
    continues the newest complete checkpoint of ``exp_name`` (``ckpt/latest``); a path continues that checkpoint.
    ``overrides`` (``{'policy.learn.batch_size': 512}``, the CLI's ``--set``) change the config's values, checked as
    the config file's are.
    """
    if isinstance(seed, (list, tuple, range)):
        from .serial_seeds import train_seeds

        def setup(cfg: EasyDict, run: SimpleNamespace, resume_path: str | None) -> tuple:
            return learn_sampler(cfg, run.buffer, run.collector_env.env_ref), None
        return train_seeds(serial_pipeline, input_cfg, seed, setup, env_setting=env_setting, model=model,
                           max_train_iter=max_train_iter, max_env_step=max_env_step, resume=resume,
                           overrides=overrides)
    cfg, resume_path = compile_run(input_cfg, seed, resume, overrides)
    with starting(cfg, resume_path):
        run = build_serial(cfg, env_setting, model, save_cfg=resume_path is None)
    with closing(run):
        with starting(cfg, resume_path):
            sample = learn_sampler(cfg, run.buffer, run.collector_env.env_ref)
            if resume_path:
                run.learner.resume(resume_path)
        train_serial(cfg, run, sample, max_train_iter, max_env_step)
    return run.policy


def build_serial(cfg: EasyDict, env_setting: list | None = None, model: nn.Module | None = None,
                 save_cfg: bool = True) -> SimpleNamespace:
    """Envs, policy, learner, collector, evaluator and replay buffer of a serial run, checked against each other
    (``fit_model_to_env``, which re-saves ``total_config.py`` with ``save_cfg``, and ``first_step``) and seeded."""
    env_setting = env_setting or get_vec_env_setting(cfg.env)
    collector_env, evaluator_env = build_envs(cfg, env_setting)
    with closed_on_error([collector_env, evaluator_env]) as closables:
        fit_model_to_env(cfg, collector_env, save=save_cfg)
        run = _build_parts(cfg, collector_env, evaluator_env, model)
        closables[:] = run.closables
        first_step(cfg, env_setting, run.policy, [run.buffer])
    return run


def _build_parts(cfg: EasyDict, collector_env: Any, evaluator_env: Any, model: nn.Module | None) -> SimpleNamespace:
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    if cfg.policy.deterministic:
        set_deterministic(True)
    policy = create_run_policy(cfg, model=model)
    tracker = start_tracker(cfg)
    tb_logger = build_tb_logger(cfg.exp_name, tracker=tracker)
    kwargs = dict(tb_logger=tb_logger, exp_name=cfg.exp_name)
    collector = create_serial_collector(cfg.policy.collect.collector, env=collector_env, policy=policy.collect_mode,
                                       **kwargs)
    evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, **kwargs)
    collector.on_nonfinite = evaluator.on_nonfinite = cfg.policy.learn.learner.on_nonfinite
    learner, buffer = build_learner(cfg, policy, tb_logger)
    run = SimpleNamespace(policy=policy, tb_logger=tb_logger, collector_env=collector_env, collector=collector,
                          evaluator=evaluator, learner=learner, buffer=buffer, loop=RunLoop(cfg.seed),
                          closables=[collector, evaluator, tb_logger, *([tracker] if tracker else [])])
    for name, part in (('collector', collector), ('evaluator', evaluator), ('loop', run.loop)):
        learner.attach(name, part)
    return run


def build_learner(cfg: EasyDict, policy: Policy, tb_logger: Any) -> tuple[BaseLearner, Any]:
    """The learner over ``policy``'s learn mode and the replay buffer it trains from, attached to its checkpoints."""
    kwargs = dict(tb_logger=tb_logger, exp_name=cfg.exp_name)
    learner = create_learner(cfg.policy.learn.learner, policy=policy.learn_mode, **kwargs)
    buffer = BUFFER_REGISTRY.build(cfg.policy.other.replay_buffer.type, cfg.policy.other.replay_buffer, **kwargs)
    learner.attach('replay_buffer', buffer, buffer=True)
    learner.save_replay_buffer = cfg.policy.other.replay_buffer.save_replay_buffer
    learner.priority_buffer = buffer if hasattr(buffer, 'update') else None
    return learner, buffer


class RunLoop:
    """Where the pipeline's loop stands: learn steps left of the current collect round (a resume point can fall
    inside one) and the run's seed."""

    def __init__(self, seed: int) -> None:
        self.seed, self.updates_left = seed, 0

    def state_dict(self) -> dict[str, int]:
        return {'seed': self.seed, 'updates_left': self.updates_left}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.updates_left = state['updates_left']


def load_demo_buffer(cfg: EasyDict, buffer: ReplayBuffer, env: Any, path: str) -> ReplayBuffer:
    """The demonstrations of ``path`` on ``buffer``'s device, checked against this run's ``env`` and model."""
    if cfg.policy.priority:
        raise ConfigError("policy.priority=True cannot be combined with demonstration batches; set it to False")
    discrete = get_policy_cls(cfg.policy).action_space_type == 'discrete'
    return demo_buffer(path, ReplayBuffer, cfg.policy, getattr(env, 'env_id', None), discrete,
                       device=str(buffer.device))


def learn_sampler(cfg: EasyDict, buffer: ReplayBuffer, env: Any) -> Callable[[int], Batch]:
    """``buffer.sample``, or with ``policy.other.offline_buffer.path`` set, a sampler mixing that file's
    transitions (real rewards) into every batch at ``ratio``."""
    offline = cfg.policy.other.offline_buffer
    if not offline.path:
        return buffer.sample
    if not 0 < offline.ratio < 1:
        raise ConfigError(f"policy.other.offline_buffer.ratio must be in (0, 1), got {offline.ratio}")
    return mixed_sampler([(buffer, 1 - offline.ratio), (load_demo_buffer(cfg, buffer, env, offline.path),
                                                         offline.ratio)])


def train_serial(cfg: EasyDict, run: SimpleNamespace, sample: Callable[[int], Batch | None], max_train_iter: int,
                 max_env_step: int, after_collect: Callable[[], None] | None = None) -> None:
    """Random warm-up, then {evaluate, collect, push, train} until a stop; then checkpoint and summarise. Ctrl-C
    (or SIGTERM) stops at the next learn step with a resume point, then raises ``KeyboardInterrupt``."""
    learner, collector = run.learner, run.collector
    max_train_iter = begin_run(cfg, run, max_train_iter)
    with graceful_interrupt() as interrupted, naming_resume_point(learner), learner_threads(cfg) as threads:
        warm_up(cfg, run)
        with RunProgress(cfg, collector.envstep, max_env_step, lambda: learner.train_iter) as progress:
            _train_loop(cfg, run, sample, (max_train_iter, max_env_step), after_collect, progress, interrupted,
                        threads)
        after_run(cfg, learner, interrupted.is_set())
    summarise(cfg, learner, collector.envstep, run.evaluator, interrupted=interrupted.is_set())
    if interrupted.is_set():
        raise KeyboardInterrupt


def begin_run(cfg: EasyDict, run: SimpleNamespace, max_train_iter: int) -> int:
    """The learner's before-run hooks, the env-step count carried over by a resumed run, the run's phase timer;
    returns the iteration cap (``learner.train_iterations``, DI-engine's, caps it too)."""
    run.learner.call_hook('before_run')
    run.collector.envstep = max(run.collector.envstep, run.learner.last_envstep)
    run.timer = PhaseTimer(run.collector.envstep, run.learner.train_iter)
    return min(max_train_iter, cfg.policy.learn.learner.train_iterations)


def warm_up(cfg: EasyDict, run: SimpleNamespace) -> None:
    """``random_collect_size`` env steps of uniformly random actions into the buffer, before a new run learns."""
    learner = run.learner
    if cfg.policy.random_collect_size > 0 and learner.train_iter == 0 and learner.last_resume_point is None:
        with run.timer.phase('collect'):
            store(cfg, run, random_collect(run.collector, run.policy.collect_mode, cfg.policy.random_collect_size,
                                           run.collector_env.action_space, cfg.seed))


def collect_round(cfg: EasyDict, run: SimpleNamespace, after_collect: Callable[[], None] | None,
                  progress: RunProgress | None) -> bool:
    """Evaluate if due, then collect a round into the buffer and set the round's learn steps; True where the run
    reached its stop value (nothing collected then). ``progress``: the bar to show it on, if any."""
    learner, collector, evaluator, timer = run.learner, run.collector, run.evaluator, run.timer
    if evaluator.should_eval(learner.train_iter):
        with timer.phase('eval'):
            stop, info = evaluator.eval(learner.save_checkpoint, learner.train_iter, collector.envstep)
        show_eval(progress, info)
        if stop:
            return True
    with timer.phase('collect'):
        batch = collect_batch(collector, cfg.policy.collect.n_sample, learner.train_iter)
    store_round(cfg, run, batch, after_collect, progress)
    return False


def show_eval(progress: RunProgress | None, info: dict[str, float]) -> None:
    if progress is not None:
        progress.set_postfix(eval_return=f"{info['return_mean']:.1f}")


def store_round(cfg: EasyDict, run: SimpleNamespace, batch: dict[str, Any], after_collect: Callable[[], None] | None,
                progress: RunProgress | None) -> None:
    """A collected round's ``batch`` into the run (``store``, then ``after_collect``); set the round's learn
    steps."""
    with run.timer.phase('collect'):
        store(cfg, run, batch)
        if after_collect is not None:
            after_collect()
    if progress is not None:
        progress.update(run.collector.envstep - progress.n)
    run.loop.updates_left = cfg.policy.learn.update_per_collect


def _train_loop(cfg: EasyDict, run: SimpleNamespace, sample: Callable[[int], Batch | None], limits: tuple[int, int],
                after_collect: Callable[[], None] | None, progress: RunProgress, interrupted: threading.Event,
                threads: CpuThreads) -> None:
    learner, collector, loop = run.learner, run.collector, run.loop
    max_train_iter, max_env_step = limits

    def finished() -> bool:
        return collector.envstep >= max_env_step or learner.train_iter >= max_train_iter

    done = learner.last_resume_point is not None and finished()  # resumed from its end: nothing evaluated again
    if done:
        build_logger(cfg.exp_name, 'summary', console=True).info(
            f"{cfg.exp_name} had already finished: {collector.envstep} env steps, {learner.train_iter} train "
            f"iterations reach this budget; raise --max-env-step or --max-train-iter to continue it")
    timer, log_freq, logged = run.timer, cfg.policy.learn.learner.hook.log_show_after_iter, learner.train_iter
    while not done and not interrupted.is_set():
        # else a resumed run finishes the round its checkpoint fell in
        if loop.updates_left == 0 and collect_round(cfg, run, after_collect, progress):
            break
        with timer.phase('learn'):
            _learn_round(cfg, run, sample, interrupted)
        if log_freq and learner.train_iter - logged >= log_freq:  # the timing at the learner's log rate
            logged = learner.train_iter
            log_times(cfg, run.tb_logger, logged, timer.report(collector.envstep, logged), collector.envstep)
        threads.check()
        done = finished()


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
        run.learner.train(batch, run.collector.envstep)
