"""The parallel off-policy pipeline on Ray: collector and evaluator actors, one learner in the driver.

The driver keeps one request in flight per collector (``ray.wait``), so collection overlaps learning, and trains
``update_per_collect`` steps per ``n_sample`` transitions received, as the serial pipeline does. Weights travel
through Ray's object store once per broadcast. A failed actor is replaced; its request in flight is lost and counted.
"""
from __future__ import annotations

import copy
import math
import threading
import time
from functools import partial
from types import SimpleNamespace
from typing import Any

import torch
from easydict import EasyDict
from torch import nn

from ding_lite.data.collate import unflatten_batch
from ding_lite.utils import set_deterministic, set_pkg_seed
from ding_lite.worker import InteractionSerialEvaluator
from ding_lite.worker.logger import log_episodes
from ding_lite.worker.episode_metrics import InfoStats
from ding_lite.worker.logger import build_logger, build_tb_logger, write_scalars
from envs import BaseEnvManager
from envs.from_gym import vec_env_setting
from envs.from_gym import adapted_env
from policy_zoo import Policy
from ..kit.config_input import compile_run
from ..kit.cpu_threads import learner_threads
from ..kit.env_check import first_step, fit_model_to_env
from ..kit.life_cycle import PhaseTimer, RunProgress, after_run, closed_on_error, closing, graceful_interrupt, \
    log_times, naming_resume_point, resume_point_on, start_tracker, starting, summarise
from ..kit.run_parts import create_run_policy, store
from ..kit.steps import build_learner, learn_sampler
from ..kit.ray_join import cpus_needed, import_ray, ray_address
from .workers import ActorFailure, ActorPool, Slot

POLL_SECONDS = 0.1  # longest block in ray.wait: Ctrl-C and evaluation results are looked at this often


def parallel_pipeline(input_cfg: str | tuple | list, seed: int | None = None, env_setting: list | None = None,
                      model: nn.Module | None = None, max_train_iter: int = int(1e10),
                      max_env_step: int = int(1e10), resume: bool | str = False,
                      overrides: dict[str, Any] | None = None) -> Policy:
    """Train the config's policy with ``parallel.collector_num`` collector actors and an evaluator actor on Ray,
    and one learner here (on CUDA with ``policy.cuda`` where there is one); returns the trained policy.

    Arguments as ``serial_pipeline``'s (``overrides`` too). Ctrl-C stops at the next step, writes ``ckpt_last``
    (a resume point), shuts every actor down and raises ``KeyboardInterrupt``; ``resume`` continues a parallel or
    serial run.
    """
    ray = import_ray('the parallel pipeline')
    cfg, resume_path = compile_run(input_cfg, seed, resume, overrides, pipeline='parallel',
                                   env_setting=env_setting)
    with starting(cfg, resume_path):
        run = build_parallel(cfg, env_setting, model, save_cfg=resume_path is None)
    with closing(run):
        with starting(cfg, resume_path):
            if resume_path:
                run.learner.resume(resume_path)
            run.pool = ActorPool(ray, cfg, run, resumed=resume_path is not None)
            run.closables.insert(0, run.pool)
            run.pool.start()
        # with Ray on this machine the learner takes the cores the actors leave: more threads would spin-wait on
        # cores the actors need (2 cores: the learner waited for data 35% of the time with 2 threads, 1% with 1)
        reserved = cpus_needed(cfg.parallel) if ray_address(cfg.parallel)[0] is None else 0
        with graceful_interrupt() as interrupted, learner_threads(cfg, reserved):
            train_parallel(cfg, run, max_train_iter, max_env_step, interrupted)
    if interrupted.is_set():
        raise KeyboardInterrupt
    return run.policy


def build_parallel(cfg: EasyDict, env_setting: list | None, model: nn.Module | None,
                   save_cfg: bool = True) -> SimpleNamespace:
    """The driver's side of a parallel run: the policy, learner, replay buffer (on the learner's device), the
    evaluator's bookkeeping; the env setting and spaces are checked on one env here."""
    env_setting = vec_env_setting(cfg.env, env_setting)
    env_fn, collector_cfgs, _ = env_setting
    probe = BaseEnvManager([partial(adapted_env, env_fn, cfg=collector_cfgs[0])])
    try:
        fit_model_to_env(cfg, probe, save=save_cfg)
        env_ref = probe.env_ref
    finally:
        probe.close()
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    if cfg.policy.deterministic:
        set_deterministic(True)
    if cfg.policy.other.replay_buffer.device == 'cpu':
        cfg.policy.other.replay_buffer.device = cfg.policy.device  # a batch never crosses to the learner's device
    policy = create_run_policy(cfg, model=model, enable_field=['learn', 'eval'])
    tracker = start_tracker(cfg)
    tb_logger = build_tb_logger(cfg.exp_name, 'parallel', tracker)
    with closed_on_error([tb_logger, *([tracker] if tracker else [])]) as closables:
        learner, buffer = build_learner(cfg, policy, tb_logger)
        first_step(cfg, env_setting, policy, [buffer])
    evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, None, None, tb_logger, cfg.exp_name)
    loop = ParallelLoop(cfg.seed, cfg.parallel.collector_num)
    learner.attach('evaluator', evaluator)
    learner.attach('loop', loop)
    return SimpleNamespace(policy=policy, tb_logger=tb_logger, learner=learner, buffer=buffer, evaluator=evaluator,
                           loop=loop, env_setting=env_setting, sample=learn_sampler(cfg, buffer, env_ref),
                           logger=build_logger(cfg.exp_name, 'parallel', console=True),
                           closables=closables)


class ParallelLoop:
    """The driver's counters, saved in resume points: transitions received, lost and owed learn steps, and per
    actor slot its replacements and generation (which picks a new actor's seeds)."""

    def __init__(self, seed: int, collector_num: int) -> None:
        self.seed = seed
        self.envstep = 0             # transitions received (= pushed into the replay buffer)
        self.lost = 0                # transitions of requests lost with a failed actor
        self.updates_owed = 0.0      # learn steps the received transitions call for, not yet taken
        self.restarts = [0] * (collector_num + 1)      # per slot: collectors, then the evaluator
        self.generation = [0] * (collector_num + 1)    # actors started in each slot before the current one

    def state_dict(self) -> dict[str, Any]:
        # 'updates_left': a serial run resumed from this checkpoint takes the owed steps
        return {'seed': self.seed, 'envstep': self.envstep, 'lost': self.lost,
                'updates_owed': self.updates_owed, 'updates_left': int(self.updates_owed),
                'restarts': list(self.restarts), 'generation': list(self.generation)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Also continues a serial run's checkpoint (which has only ``updates_left``)."""
        self.envstep, self.lost = state.get('envstep', 0), state.get('lost', 0)
        self.updates_owed = float(state.get('updates_owed', state.get('updates_left', 0)))
        slots = len(self.restarts)
        self.restarts = (list(state.get('restarts', [])) + [0] * slots)[:slots]
        self.generation = (list(state.get('generation', [])) + [0] * slots)[:slots]


def train_parallel(cfg: EasyDict, run: SimpleNamespace, max_train_iter: int, max_env_step: int,
                   interrupted: threading.Event) -> None:
    """Keep every collector busy, learn from what arrives, evaluate on the side, until a stop; then checkpoint
    (also on Ctrl-C) and summarise."""
    learner, loop = run.learner, run.loop
    max_train_iter = min(max_train_iter, cfg.policy.learn.learner.train_iterations)  # DI-engine's cap too
    learner.call_hook('before_run')
    loop.envstep = max(loop.envstep, learner.last_envstep)
    driver = Driver(cfg, run, max_env_step)
    # a lost actor past its restarts, a lost connection (between learn steps): a resume point first
    fatal = (ActorFailure, ConnectionError, import_ray('the parallel pipeline').exceptions.RayError)
    with RunProgress(cfg, loop.envstep, max_env_step, lambda: learner.train_iter,
                     max_train_iter=max_train_iter) as driver.bar, \
            resume_point_on(learner, fatal, cfg), naming_resume_point(learner):
        for slot in run.pool.collectors:
            driver.request_collect(slot)
        # the stop is checked first: a run resumed from its final checkpoint ends there, evaluating nothing again
        while not interrupted.is_set() and learner.train_iter < max_train_iter and not driver.done():
            driver.step()
        driver.finish_evaluation(interrupted)
        if not interrupted.is_set() and not driver.stopped:  # its budget used: its last weights evaluated
            driver.evaluate_last(interrupted)
    after_run(cfg, learner, interrupted.is_set())
    driver.summarise(interrupted.is_set())


class Driver:
    """One pass of the driver's loop at a time (``step``): evaluate when due, take what the actors finished,
    ask them for more, learn one step when the data calls for it."""

    def __init__(self, cfg: EasyDict, run: SimpleNamespace, max_env_step: int) -> None:
        self._cfg, self._run, self._max_env_step = cfg, run, max_env_step
        self._loop, self._pool, self._learner = run.loop, run.pool, run.learner
        learn = cfg.policy.learn
        self._batch_size, self._round = learn.batch_size, learn.update_per_collect * len(run.pool.collectors)
        fresh = run.learner.train_iter == 0 and run.learner.last_resume_point is None
        self._warmup_left = cfg.policy.random_collect_size if fresh else 0  # random-action transitions to ask for
        self._episodes: list[dict[str, float]] = []  # finished since the last collector log line
        self._entropies: list[float] = []  # the collectors' mean collect entropies since then
        self._info_stats = InfoStats(cfg.env.info_stats) if cfg.env.get('info_stats') else None  # the collectors'
        self._env_restarts, self._last_log_iter = 0, run.learner.train_iter
        self._collector_logger = build_logger(cfg.exp_name, 'collector')
        # seconds: the driver blocked with nothing to learn, learning, and the collectors' own busy time
        self.times = {'wait': 0.0, 'learn': 0.0, 'collector_busy': 0.0, 'start': time.perf_counter()}
        # the driver's own time: collect = waiting for and storing the collectors' data; eval = asking for and
        # recording evaluations (ckpt_best included)
        self.timer = PhaseTimer(self._loop.envstep, run.learner.train_iter)
        self._times_logged = run.learner.train_iter
        self.bar: Any = None
        self._stop = False

    def done(self) -> bool:
        """The run is over: the stop value, or the env-step budget and its learn steps done."""
        return self._stop or (self._loop.envstep >= self._max_env_step and self._loop.updates_owed < 1)

    def step(self) -> None:
        """One pass: evaluate when due, take what the actors finished, learn one step when one is owed."""
        loop, timer = self._loop, self.timer
        with timer.phase('eval'):
            self._maybe_evaluate()
        if loop.updates_owed >= 1 and self._run.buffer.count() < self._batch_size:
            loop.updates_owed = 0.0  # as the serial pipeline: no learn steps until a batch can be drawn
        learn = loop.updates_owed >= 1
        slots = [self._pool.evaluator] + (self._pool.collectors if loop.updates_owed < self._round else [])
        start = time.perf_counter()
        with timer.phase('collect'):
            finished = self._pool.wait(slots, 0 if learn else POLL_SECONDS)
        if not learn:
            self.times['wait'] += time.perf_counter() - start
        for slot, result in finished:
            evaluated = slot is self._pool.evaluator
            with timer.phase('eval' if evaluated else 'collect'):
                (self._on_evaluated if evaluated else self._on_collected)(slot, result)
        if learn and not self._stop:
            start = time.perf_counter()
            with timer.phase('learn'):
                self._learner.train(self._run.sample(self._batch_size), loop.envstep)
            loop.updates_owed -= 1
            self.times['learn'] += time.perf_counter() - start
            self._maybe_log()

    def request_collect(self, slot: Slot) -> None:
        """Ask ``slot``'s collector for its next transitions (random ones while the warm-up lasts)."""
        n_sample = self._cfg.policy.collect.n_sample
        warmup = self._warmup_left > 0
        size = min(math.ceil(self._cfg.policy.random_collect_size / len(self._pool.collectors)),
                   self._warmup_left) if warmup else n_sample
        self._warmup_left -= size if warmup else 0
        weights = self._pool.weights_for(slot, self._learner.train_iter)
        self._pool.submit(slot, 'collect', size, weights, warmup, size=size, warmup=warmup)

    def _on_collected(self, slot: Slot, result: dict | None) -> None:
        loop, request = self._loop, slot.request
        if result is None:  # the actor failed and was replaced: its request is lost
            loop.lost += request['size']
            self._warmup_left += request['size'] if request['warmup'] else 0
        else:
            batch = unflatten_batch({k: torch.from_numpy(v.copy()) for k, v in result['batch'].items()})
            store(self._cfg, self._run, batch)
            loop.envstep += result['count']
            if not request['warmup']:
                loop.updates_owed += self._cfg.policy.learn.update_per_collect * result['count'] \
                    / self._cfg.policy.collect.n_sample
            self._episodes += result['episodes']
            self._entropies += [result['entropy']] if result.get('entropy') is not None else []
            if self._info_stats is not None:
                self._info_stats.add_parts(result['info_stats'])
            self._env_restarts += result['env_restarts']
            self.times['collector_busy'] += result['busy']
            self.bar.update(loop.envstep - self.bar.n)
        if loop.envstep < self._max_env_step and not self._stop:
            self.request_collect(slot)

    @property
    def stopped(self) -> bool:
        """An evaluation reached the stop value."""
        return self._stop

    def evaluate_last(self, interrupted: threading.Event) -> None:
        """A run that ends on its budget evaluates the weights it ends with (unless it just did), as the serial
        pipeline does."""
        self._maybe_evaluate(at_end=True)
        self.finish_evaluation(interrupted)

    def _maybe_evaluate(self, at_end: bool = False) -> None:
        slot, train_iter = self._pool.evaluator, self._learner.train_iter
        if slot.ref is None and self._run.evaluator.should_eval(train_iter, at_end):
            weights = self._pool.broadcast(train_iter, fresh=True)
            # ckpt_best must hold the weights evaluated, not the newer ones the learner has when the result is in
            state = copy.deepcopy(self._learner.checkpoint_state())
            self._pool.submit(slot, 'evaluate', weights, weights=weights, train_iter=train_iter,
                              envstep=self._loop.envstep, state=state)

    def finish_evaluation(self, interrupted: threading.Event) -> None:
        """Wait for the evaluation in flight (a run ends with the newest result it asked for), until an interrupt;
        an evaluator that cannot be placed ends the wait with ``ActorFailure`` (``ActorPool.wait``)."""
        while self._pool.evaluator.ref is not None and not interrupted.is_set():
            for slot, result in self._pool.wait([self._pool.evaluator], POLL_SECONDS):
                self._on_evaluated(slot, result)

    def _on_evaluated(self, slot: Slot, result: dict | None) -> None:
        request = slot.request
        if result is None:  # the evaluator was replaced: evaluate the same weights again
            self._pool.submit(slot, 'evaluate', request['weights'], **request)
            return
        stop, info = self._run.evaluator.record(
            result['returns'], lambda name: self._learner.save_checkpoint(name, state=request['state']),
            request['train_iter'], request['envstep'], result.get('metrics'), info_stats=result['info_stats'])
        self._learner.evaluated()
        self.bar.set_postfix(eval_return=f"{info['return_mean']:.1f}")
        self._stop = self._stop or stop

    def _maybe_log(self) -> None:
        train_iter, run = self._learner.train_iter, self._run
        log_freq = self._cfg.policy.learn.learner.hook.log_show_after_iter
        if log_freq and train_iter - self._times_logged >= log_freq:  # the timing at the learner's log rate
            self._times_logged = train_iter
            log_times(self._cfg, run.tb_logger, train_iter, self.timer.report(self._loop.envstep, train_iter),
                      self._loop.envstep)
        if train_iter - self._last_log_iter < self._cfg.policy.collect.collector.collect_print_freq:
            return
        self._last_log_iter = train_iter
        if self._episodes:
            entropy = sum(self._entropies) / len(self._entropies) if self._entropies else None
            log_episodes(run.tb_logger, self._collector_logger, self._episodes, train_iter, self._loop.envstep,
                         self._env_restarts, entropy, 0, self._info_stats.pop() if self._info_stats else {})
            self._episodes, self._entropies = [], []
        write_scalars(run.tb_logger, 'parallel', self.stats(), self._loop.envstep)

    def stats(self) -> dict[str, float]:
        """Transitions received and lost, actor restarts, and where the time went (fractions of the wall time)."""
        elapsed = max(time.perf_counter() - self.times['start'], 1e-9)
        return {'received': float(self._loop.envstep), 'lost': float(self._loop.lost),
                'actor_restarts': float(sum(self._loop.restarts)), 'learner_busy': self.times['learn'] / elapsed,
                'learner_waiting_for_data': self.times['wait'] / elapsed,
                'collector_busy': self.times['collector_busy'] / (elapsed * len(self._pool.collectors))}

    def summarise(self, interrupted: bool) -> None:
        loop, stats = self._loop, self.stats()
        write_scalars(self._run.tb_logger, 'parallel', stats, loop.envstep)
        logger = summarise(self._cfg, self._learner, loop.envstep, self._run.evaluator, 'parallel', interrupted)
        in_flight = sum(slot.request['size'] for slot in self._pool.collectors if slot.ref is not None)
        logger.info(f"collectors: {loop.envstep} transitions received, {loop.lost} lost in "
                    f"{sum(loop.restarts)} actor restarts, {in_flight} in flight at the end (dropped); "
                    f"learner busy {stats['learner_busy']:.0%}, waiting for data "
                    f"{stats['learner_waiting_for_data']:.0%}; collectors busy {stats['collector_busy']:.0%}")
