"""The Ray side of the parallel pipeline: what its actors run (collecting with a CPU collect-mode policy, and
evaluating), and the pool that starts them, sends them requests and weights, and replaces those that fail.

The actor classes are plain: the pool wraps them with ``ray.remote``, so importing this module needs no Ray. Each
actor gets the policy class and model from the driver (so a policy or model a user registered in ``__main__``
works too) and writes no files: the driver logs what they report.
"""
from __future__ import annotations

import contextlib
import copy
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from easydict import EasyDict
from torch import nn

from ding_lite.config import ConfigError
from ding_lite.data.collate import batch_len, flatten_batch
from ding_lite.registry import import_names
from ding_lite.utils import set_pkg_seed
from ding_lite.worker import InteractionSerialEvaluator, create_serial_collector
from ding_lite.worker.finite_check import NonFiniteEnvError
from policy_zoo import Policy
from ..kit.run_parts import build_env_manager, collect_batch, random_collect
from ..kit.ray_join import connect_ray, cpus_needed

NAMESPACE = 'ding_lite'  # of the actors' Ray names (see ``actor_name``)
CHECK_SECONDS = 0.5  # how often an actor waiting for a place has the cluster asked whether it still fits
Weights = dict[str, np.ndarray]  # a model's state_dict as numpy arrays: read from Ray's object store without a copy


def model_weights(policy: Policy) -> Weights:
    """The weights the actors act with (one device-to-host copy on a GPU learner)."""
    return {k: v.detach().cpu().numpy() for k, v in policy.eval_mode.state_dict()['model'].items()}


def _cpu_policy(cfg: EasyDict, policy_cls: type, model: nn.Module, field: str, num_threads: int) -> Policy:
    torch.set_num_threads(num_threads)
    import_names(cfg.create_config.get('import_names'))  # the user's wrappers and env plugins, as in the driver
    policy_cfg = copy.deepcopy(cfg.policy)
    policy_cfg.cuda, policy_cfg.device = False, 'cpu'
    return policy_cls(policy_cfg, model=model, enable_field=[field])


def _load(mode: Any, weights: Weights | None) -> None:
    if weights is not None:  # np.array: the object store's arrays are read-only
        mode.load_state_dict({'model': {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}})


class CollectorWorker:
    """A collector actor: its own env manager (base or subprocess) and collect-mode policy on the CPU."""

    def __init__(self, cfg: EasyDict, env_setting: tuple, policy_cls: type, model: nn.Module, seed: int,
                 num_threads: int, env_offset: int = 0) -> None:
        set_pkg_seed(seed, use_cuda=False)
        self._seed, self._env_offset = seed, env_offset
        self._policy = _cpu_policy(cfg, policy_cls, model, 'collect', num_threads)
        self._env = build_env_manager(cfg, env_setting, 'collector', seed)
        self._collector = create_serial_collector(cfg.policy.collect.collector, env=self._env,
                                                  policy=self._policy.collect_mode, exp_name=None,
                                                  on_nonfinite=cfg.policy.learn.learner.on_nonfinite)

    def ready(self) -> bool:
        return True

    def collect(self, n_sample: int, weights: Weights | None = None, warmup: bool = False) -> dict[str, Any]:
        """At least ``n_sample`` transitions as one collated batch ``{field path: array}``, acting with
        ``weights`` (None: the last ones), or with uniform random actions for the ``warmup``; plus the
        episodes finished, env restarts and seconds spent."""
        start = time.perf_counter()
        _load(self._policy.collect_mode, weights)
        restarts = self._collector.env_restarts
        if warmup:
            samples = random_collect(self._collector, self._policy.collect_mode, n_sample, self._env, self._seed)
        else:
            samples = collect_batch(self._collector, n_sample)
        batch = {path: value.numpy() for path, value in flatten_batch(samples).items()}
        if ('env_id',) in batch:  # a recurrent policy's sequences: env ids unique across the collectors
            batch[('env_id',)] = batch[('env_id',)] + self._env_offset
        return {'batch': batch, 'count': batch_len(samples), 'episodes': self._collector.pop_episodes(),
                'entropy': self._collector.pop_entropy(),  # None after a warm-up (no policy forwards)
                'info_stats': self._env.info_stats.pop_parts() if self._env.info_stats is not None else {},
                'env_restarts': self._collector.env_restarts - restarts, 'busy': time.perf_counter() - start}

    def close(self) -> None:
        self._collector.close()


class EvaluatorWorker:
    """The evaluator actor: the serial evaluator's episodes (same seeds), with the weights it is sent."""

    def __init__(self, cfg: EasyDict, env_setting: tuple, policy_cls: type, model: nn.Module,
                 num_threads: int) -> None:
        set_pkg_seed(cfg.seed, use_cuda=False)
        self._policy = _cpu_policy(cfg, policy_cls, model, 'eval', num_threads)
        env = build_env_manager(cfg, env_setting, 'evaluator', cfg.seed)
        self._evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, env, self._policy.eval_mode,
                                                     exp_name=None, on_nonfinite=cfg.policy.learn.learner.on_nonfinite)

    ready = CollectorWorker.ready

    def evaluate(self, weights: Weights) -> dict[str, Any]:
        start = time.perf_counter()
        _load(self._policy.eval_mode, weights)
        returns = self._evaluator.run_episodes()
        return {'returns': returns, 'metrics': self._evaluator.episode_metrics,
                'info_stats': self._evaluator.info_stats, 'busy': time.perf_counter() - start}

    def close(self) -> None:
        self._evaluator.close()


class ActorFailure(RuntimeError):
    """An actor failed more than ``parallel.max_actor_restarts`` times."""


def actor_name(exp_name: str, slot: Slot, generation: int) -> str:
    """The Ray name of an actor (in namespace ``NAMESPACE``): ``ding_lite:<exp_name>:collector<i>:<generation>``
    or ``...:evaluator:<generation>``, for ``ray.get_actor`` and the dashboard."""
    return f"ding_lite:{exp_name}:{slot.kind}{slot.index if slot.kind == 'collector' else ''}:{generation}"


class Slot:
    """An actor's place in the pool: the actor, its request in flight and the weights it holds."""

    def __init__(self, kind: str, index: int) -> None:
        self.kind, self.index = kind, index
        self.name = f"{kind} {index}" if kind == 'collector' else kind
        self.actor: Any = None
        self.ref: Any = None          # the request in flight
        self.request: dict[str, Any] = {}
        self.weights_iter = -1        # train iteration of the weights the actor holds (-1: its initial model)
        self.placing: Any = None      # the actor's first answer while it waits to be placed (None: placed)
        self.spawned = 0.0            # when the actor was asked for (time.monotonic)
        self.checked = 0.0            # when the cluster was last asked whether it can still place the actor
        self.share = 1.0              # the fraction of its CPUs the actor reserves


class ActorPool:
    """The run's actors: ``collector_num`` collectors and one evaluator, each with at most one request in flight.
    An actor whose request fails (it died or raised) is killed and replaced, up to ``max_actor_restarts`` times
    per slot; its request is lost."""

    def __init__(self, ray: Any, cfg: EasyDict, run: SimpleNamespace, resumed: bool) -> None:
        self._ray, self._cfg, self._par, self._run = ray, cfg, cfg.parallel, run
        self._loop, self._logger = run.loop, run.logger
        self._resumed, self._started_ray = resumed, False
        self.collectors = [Slot('collector', i) for i in range(self._par.collector_num)]
        self.evaluator = Slot('evaluator', self._par.collector_num)
        self._weights_ref, self._weights_iter = None, -1
        # a normaliser's statistics change with every batch received, learn step or not: they date a broadcast too
        self._weights_envstep, self._normalised = -1, hasattr(run.policy.model, 'obs_norm')

    def start(self) -> None:
        """Connect to Ray (see ``connect_ray``) and start every actor."""
        ray, par = self._ray, self._par
        self._started_ray, where = connect_ray(ray, par)
        self._lost_before = {node['NodeID'] for node in ray.nodes() if not node['Alive']}  # not this run's loss
        share = self._cpu_share(ray.cluster_resources().get('CPU', 0))
        self._model_ref = ray.put(copy.deepcopy(self._run.policy.model).to('cpu'))
        self._threads = max(1, int(par.num_cpus_per_collector))
        self._collector_cls = ray.remote(max_restarts=0)(CollectorWorker)
        self._evaluator_cls = ray.remote(max_restarts=0)(EvaluatorWorker)
        for slot in self.slots:
            slot.share = share
        if self._resumed:  # new actors, new seeds: a resumed run does not replay the episodes it had collected
            self._loop.generation = [g + 1 for g in self._loop.generation]
        start = time.perf_counter()
        for slot in self.slots:
            self._spawn(slot)
        self._await_ready()
        env = self._cfg.env
        self._logger.info(f"ray {where}: {len(self.collectors)} collectors x {env.collector_env_num} envs, "
                          f"1 evaluator x {env.evaluator_env_num} envs, ready in {time.perf_counter() - start:.1f} "
                          f"s; learner on {self._cfg.policy.device}")

    def _await_ready(self, poll_seconds: float = 0.1) -> None:
        """Wait until every actor is built (an actor that fails to build is replaced as any other)."""
        for slot in self.slots:
            self.submit(slot, 'ready')
        while any(slot.ref is not None for slot in self.slots):
            for slot, result in self.wait(self.slots, poll_seconds):
                if result is None:
                    self.submit(slot, 'ready')

    def _cpu_share(self, have: float) -> float:
        """The fraction of their CPUs the actors reserve: all, or, on a Ray with fewer CPUs than they ask for
        (started by someone else), as much as fits, so that none waits for a CPU forever."""
        need = cpus_needed(self._par)
        if have >= need:
            return 1.0
        if have <= 0:
            raise ConfigError("the Ray cluster reports no CPUs, so no actor could be placed")
        par = self._par
        self._logger.warning(f"the Ray cluster has {have:g} CPUs, but parallel.collector_num={par.collector_num} x "
                             f"num_cpus_per_collector={par.num_cpus_per_collector:g} + 1 for the evaluator ask for "
                             f"{need:g}: each actor reserves {have / need:.0%} of that, sharing the CPUs")
        return have / need

    @property
    def slots(self) -> list[Slot]:
        return self.collectors + [self.evaluator]

    def collector_seed(self, slot: Slot) -> int:
        """Distinct for every collector actor a run ever starts, and the same in a rerun."""
        actors = self._loop.generation[slot.index] * len(self.collectors) + slot.index
        return self._cfg.seed + actors * self._cfg.env.collector_env_num

    def _spawn(self, slot: Slot) -> None:
        run = self._run
        options = dict(name=actor_name(run.learner.exp_name, slot, self._loop.generation[slot.index]),
                       namespace=NAMESPACE, num_cpus=self._cpus(slot) * slot.share)
        if slot.kind == 'collector':
            slot.actor = self._collector_cls.options(**options).remote(
                self._cfg, run.env_setting, type(run.policy), self._model_ref, self.collector_seed(slot),
                self._threads, slot.index * self._cfg.env.collector_env_num)
        else:
            slot.actor = self._evaluator_cls.options(**options).remote(
                self._cfg, run.env_setting, type(run.policy), self._model_ref, self._threads)
        slot.ref, slot.weights_iter = None, -1  # slot.request stays: the caller reads what was lost
        slot.placing, slot.spawned = slot.actor.ready.remote(), time.monotonic()

    def _cpus(self, slot: Slot) -> float:
        """The CPUs ``slot``'s actor asks for at a full share."""
        return self._par.num_cpus_per_collector if slot.kind == 'collector' else 1.0

    def broadcast(self, train_iter: int, fresh: bool = False) -> Any:
        """The object-store reference of the newest weights broadcast, put there again once
        ``weight_sync_interval`` iterations have passed since the last broadcast (``fresh``: once any has, or with
        observation normalisation, once any transition has come in: an evaluation acts with today's statistics)."""
        stale = train_iter - self._weights_iter
        envstep = self._run.loop.envstep
        if self._weights_ref is None or stale >= (1 if fresh else self._par.weight_sync_interval) or \
                (fresh and self._normalised and envstep != self._weights_envstep):
            self._weights_ref, self._weights_iter = self._ray.put(model_weights(self._run.policy)), train_iter
            self._weights_envstep = envstep
        return self._weights_ref

    def weights_for(self, slot: Slot, train_iter: int) -> Any:
        """``broadcast``'s weights for ``slot``'s next request; None when its actor holds them already."""
        weights = self.broadcast(train_iter)
        if slot.weights_iter == self._weights_iter:
            return None
        slot.weights_iter = self._weights_iter
        return weights

    def submit(self, slot: Slot, method: str, *args: Any, **request: Any) -> None:
        slot.ref, slot.request = getattr(slot.actor, method).remote(*args), dict(request, sent=time.perf_counter())

    def wait(self, slots: list[Slot], timeout: float) -> list[tuple[Slot, dict | None]]:
        """The slots among ``slots`` whose request finished within ``timeout`` seconds, each with its result, or
        None where the actor failed or was not placed in time (it has been replaced; its request is in
        ``slot.request``)."""
        pending = {slot.ref: slot for slot in slots if slot.ref is not None}
        if not pending:
            return [(slot, None) for slot in slots if self._unplaced_too_long(slot)]
        ready, _ = self._ray.wait(list(pending), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self._ray.wait(list(pending), num_returns=len(pending), timeout=0)
        results = []
        for ref in ready:
            slot = pending[ref]
            slot.ref = None
            try:
                results.append((slot, self._ray.get(ref)))
            except self._ray.exceptions.RayError as error:
                if isinstance(getattr(error, 'cause', None), NonFiniteEnvError):  # the env's values, not a fault
                    raise error.cause from None
                self._replace(slot, error)
                results.append((slot, None))
        return results + [(slot, None) for slot in slots if self._unplaced_too_long(slot)]

    def _unplaced_too_long(self, slot: Slot) -> bool:
        """Whether ``slot``'s actor cannot be placed: a node is lost and the CPUs left cannot hold it at its share
        (known at once), or it has waited ``placement_timeout`` seconds (placement is slow). It is then asked for
        again at a CPU share that fits what the cluster has left, and its request in flight is lost. An actor that
        cannot be placed even so is an ``ActorFailure``."""
        if slot.placing is None or slot.actor is None:
            return False
        now = time.monotonic()
        waited = now - slot.spawned
        if waited < self._par.placement_timeout and now - slot.checked < CHECK_SECONDS:
            return False
        slot.checked = now
        if self._ray.wait([slot.placing], timeout=0)[0] or _has_a_process(slot.actor):
            slot.placing = None  # placed (its constructor may still run: that is not a placement's wait)
            return False
        free = self._ray.available_resources().get('CPU', 0.0)
        lost = ', '.join(f"{n['NodeManagerAddress']} ({n['NodeID'][:8]})" for n in self._ray.nodes()
                         if not n['Alive'] and n['NodeID'] not in self._lost_before)
        if waited < self._par.placement_timeout and not (lost and free < self._cpus(slot) * slot.share):
            return False
        total = self._ray.cluster_resources().get('CPU', 0.0)
        if slot.share == 0:
            raise ActorFailure(f"the {slot.name} actor could not be placed within {waited:.0f} s even without "
                               f"reserving a CPU (the cluster has {total:g} CPUs; lost nodes: {lost or 'none'})")
        share = free / self._cpus(slot)
        share = share if share < slot.share else 0.0  # no smaller share fits (CPUs split over nodes): share one
        self._logger.warning(f"the {slot.name} actor was not placed after {waited:.0f} s: the cluster has {total:g} "
                             f"CPUs, {free:g} free (lost nodes: {lost or 'none'}); asking again for "
                             f"{self._cpus(slot) * share:g} CPUs ({share:.0%} of its share), its request in flight "
                             f"is lost")
        self._kill(slot)
        slot.share = share
        self._loop.generation[slot.index] += 1
        self._spawn(slot)
        return True

    def _replace(self, slot: Slot, error: Exception) -> None:
        index = slot.index
        self._loop.restarts[index] += 1
        reason = _reason(error)
        if self._loop.restarts[index] > self._par.max_actor_restarts:
            raise ActorFailure(f"the {slot.name} actor failed {self._loop.restarts[index]} times "
                               f"(parallel.max_actor_restarts={self._par.max_actor_restarts}); last error: {reason}")
        self._kill(slot)
        self._loop.generation[index] += 1
        self._spawn(slot)
        self._logger.warning(f"{slot.name} actor failed ({reason}); replaced it (restart "
                             f"{self._loop.restarts[index]} of {self._par.max_actor_restarts})")

    def _kill(self, slot: Slot) -> None:
        if slot.actor is not None:
            with contextlib.suppress(Exception):  # it may be gone already
                self._ray.kill(slot.actor, no_restart=True)
            slot.actor, slot.ref = None, None

    def close(self) -> None:
        """Stop every actor (their envs closed where they still answer), and Ray itself if this run started it."""
        alive = [slot for slot in self.slots if slot.actor is not None]
        if alive and self._ray.is_initialized():  # a failed connection left no Ray to ask (nor to start)
            with contextlib.suppress(Exception):
                self._ray.wait([slot.actor.close.remote() for slot in alive], num_returns=len(alive), timeout=5)
        for slot in alive:
            self._kill(slot)
        if self._started_ray:
            self._ray.shutdown()


def _has_a_process(actor: Any) -> bool:
    """Whether Ray has placed ``actor`` (given it a worker process), from the GCS's actor table: Ray's state API
    needs the dashboard, which a cluster need not run. False where the table cannot be read (the actor's first
    answer then tells)."""
    try:
        from ray._private import state
        return bool(state.actors(actor_id=actor._actor_id.hex()).get('Pid'))
    except Exception:
        return False


def _reason(error: Exception) -> str:
    """One line on why an actor's request failed: the exception it raised, or how it died."""
    cause = getattr(error, 'cause', None)
    error = cause if isinstance(cause, BaseException) else error
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    why = [line for line in lines[1:] if 'died because' in line]  # Ray's cause, e.g. its node died (and which)
    return f"{type(error).__name__}: {' '.join((lines[:1] + why[:1]))}"
