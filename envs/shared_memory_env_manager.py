"""Worker processes that each step a batch of envs: actions, observations, rewards and dones in shared arrays, a
handshake in shared memory per worker and step (``worker_link``), restarts of workers whose envs crash or hang."""
from __future__ import annotations

import logging
import os
import pickle
import time
from typing import Any, Callable, NamedTuple

import numpy as np

from ding_lite.registry import ENV_MANAGER_REGISTRY
from ding_lite.utils.default_config import ConfigError, with_defaults
from .base_env import BaseEnv, BaseEnvBatchTimestep, BaseEnvTimestep
from .batch_worker import CLOSE, COMMAND, ERROR, STEP_PICKLED, Columns, action_layout, run_worker
from .env_processes import EnvFailure, ProcessEnvManager, observation_layout
from .timestep_columns import batch_of_timesteps
from .worker_link import MESSAGE, STEP, STEP_ALL_INFO, Control, ManagerEnd

logger = logging.getLogger(__name__)
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1


@ENV_MANAGER_REGISTRY.register('shared_memory')
class SharedMemoryEnvManager(ProcessEnvManager):
    """The envs in ``worker_num`` processes, each stepping its share of them per command; actions, observations
    (of a Box space), rewards and dones go through shared arrays, and the command through a slot in shared memory
    that the worker spins on for ``spin_wait`` seconds before it sleeps (while the workers of every such manager in
    the process have a core each; else it sleeps at once).

    For envs that take more than a few tens of microseconds a step (MuJoCo, Box2D) on a machine with cores to
    spare; it gives the same transitions as ``base`` for the same seeds. A worker whose env raises, dies or hangs
    (beyond ``step_timeout``) is killed and started again with all its envs: their steps come back abnormal
    (``done`` with ``info['abnormal']``: no transition crosses the restart), its other ready envs start new episodes,
    and ``max_retry`` failures in a row of one worker stop the run naming its envs and the last error.
    """

    config = dict(
        type='shared_memory',        # the registered env manager name
        worker_num=None,             # worker processes; None: one per core, at most one per env
        max_retry=5,                 # restarts in a row of one worker (no successful step between) before giving up
        step_timeout=60.0,           # seconds a worker may take for one step of its envs before it is restarted
        spin_wait=0.001,             # seconds a waiting worker or manager spins (yielding its core) before it sleeps
    )

    _live = 0  # worker processes of every manager in this process

    @classmethod
    def check_config(cls, cfg: dict) -> None:
        """Refuse a worker count that is not a positive whole number."""
        count = cfg.get('worker_num')
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise ConfigError(f"env.manager.worker_num={count!r}: expected a whole number of worker processes, at "
                              f"least 1 (or None: one per core)")
        spin = cfg.get('spin_wait', 0.0)
        if isinstance(spin, bool) or not isinstance(spin, (int, float)) or not 0 <= spin <= 1:
            raise ConfigError(f"env.manager.spin_wait={spin!r}: expected seconds between 0 and 1")

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: dict | None = None) -> None:
        given = with_defaults(type(self), cfg)
        type(self).check_config(given)
        count = min(given.worker_num or os.cpu_count() or 1, len(env_fn))
        super().__init__(env_fn, cfg, slots=count)
        self._groups = [[int(i) for i in rows] for rows in np.array_split(np.arange(self.env_num), count)]
        self._worker_of = [w for w, group in enumerate(self._groups) for _ in group]
        self._row = [k for group in self._groups for k in range(len(group))]
        self._columns: Columns | None = None
        self._views: dict[str, np.ndarray] = {}
        self._control = Control(self._ctx, count, max(len(group) for group in self._groups))
        self._link = ManagerEnd(self._control, self._conns)
        self._plans: dict[tuple[int, ...], dict[int, tuple[list[int], np.ndarray]]] = {}

    @property
    def worker_num(self) -> int:
        return len(self._groups)

    # ---- workers ----
    def _start(self, index: int) -> None:
        if self._columns is None:
            env = self.env_ref
            self._columns = Columns(self._ctx, self.env_num, observation_layout(env), action_layout(env.action_space))
            self._views = self._columns.views()
        group = self._groups[index]
        parent_conn, child_conn = self._ctx.Pipe()
        process = self._ctx.Process(target=run_worker, daemon=True, name=f'ding_lite_envs_{index}', args=(
            [self._env_fn[i] for i in group], group[0], self._columns, self._control, index,
            self._link.restarted(index), child_conn, parent_conn))
        process.start()
        child_conn.close()  # the worker holds the only other end: its death is an EOF here
        self._processes[index], self._conns[index] = process, parent_conn
        self._fresh.add(index)
        SharedMemoryEnvManager._live += 1

    def _stop(self, index: int) -> None:
        if self._processes[index] is not None:
            SharedMemoryEnvManager._live -= 1
        super()._stop(index)

    def _send(self, commands: dict[int, tuple[int, Any]], timeout: float) -> Callable[[], dict[int, tuple[bool, Any]]]:
        """Post each worker its ``(kind, payload)``; the call returned gathers ``{worker: (ok, reply or error
        text)}``, waiting until ``timeout`` after the post."""
        # spin while every manager's workers have a core each; where they outnumber the cores, spinners would
        # take the cores from the envs that step
        self._link.set_spin(self._cfg.spin_wait if SharedMemoryEnvManager._live <= _CORES else 0.0)
        failed = {}
        for index, (kind, payload) in commands.items():
            try:
                self._link.post(index, kind, payload)
            except (OSError, AttributeError) as error:
                failed[index] = (False, f"its process is gone ({error})")
        if self._fresh & set(commands):
            timeout = max(timeout, self._cfg.connect_timeout)
        self._fresh -= set(commands)
        deadline = time.monotonic() + timeout
        posted = [i for i in commands if i not in failed]

        def gather() -> dict[int, tuple[bool, Any]]:
            answers = self._link.gather(posted, deadline, timeout)
            for index, (ok, body) in answers.items():
                if not ok:
                    self._processes[index].join(0.2)
                    code = self._processes[index].exitcode
                    answers[index] = (False, body if code is None else f"{body} (exit code {code})")
                elif body[:1] == ERROR:
                    answers[index] = (False, body[1:].decode(errors='replace'))
                else:
                    answers[index] = (True, pickle.loads(body[1:]) if body else {})
            return {**answers, **failed}
        return gather

    def _call(self, env_id: int, command: str, arg: Any = None) -> Any:
        index = self._worker_of[env_id]
        message = COMMAND + pickle.dumps((command, self._row[env_id], arg))
        ok, result = self._send({index: (MESSAGE, message)}, self._cfg.reset_timeout)()[index]
        if not ok:
            raise EnvFailure(f"env {env_id} (worker {index}) failed in {command!r}: {result}")
        return result

    def _close(self, slots: list[int]) -> None:
        self._send({w: (MESSAGE, CLOSE) for w in slots}, min(self._cfg.reset_timeout, 5.0))()

    def _env_recreate(self, env_id: int) -> None:
        self._restart(self._worker_of[env_id], but=(env_id,))

    # ---- steps ----
    def _begin(self, env_ids: list[int], actions: Any, all_info: bool) -> Callable[[], _Replies]:
        """The envs' actions written and one command posted to each worker that holds some of them; the call
        returned gathers the replies."""
        plan = self._plan(env_ids)
        shared = self._shared_actions(env_ids, actions)
        commands = {}
        for index, (positions, rows) in plan.items():
            if shared:
                commands[index] = (STEP_ALL_INFO if all_info else STEP, rows)
            else:
                given = [actions[k] for k in positions]
                commands[index] = (MESSAGE, STEP_PICKLED + pickle.dumps((rows.tolist(), given, all_info)))
        gather = self._send(commands, self._cfg.step_timeout)
        return lambda: _Replies(gather(), {index: positions for index, (positions, _) in plan.items()})

    def _plan(self, env_ids: list[int]) -> dict[int, tuple[list[int], np.ndarray]]:
        """Per worker that holds some of ``env_ids``: their positions in it and their rows in the worker (uint16),
        kept per list of env ids (a run steps the same few)."""
        key = tuple(env_ids)
        plan = self._plans.get(key)
        if plan is None:
            positions: dict[int, list[int]] = {}
            for k, env_id in enumerate(env_ids):
                positions.setdefault(self._worker_of[env_id], []).append(k)
            plan = {index: (ks, np.array([self._row[env_ids[k]] for k in ks], dtype=np.uint16))
                    for index, ks in positions.items()}
            if len(self._plans) < 64:
                self._plans[key] = plan
        return plan

    def _shared_actions(self, env_ids: list[int], actions: Any) -> bool:
        """Write row k of ``actions`` into env ``env_ids[k]``'s shared action; False where they do not fit it."""
        view = self._views.get('act')
        if view is None:
            return False
        try:
            values = np.asarray(actions, dtype=view.dtype).reshape((len(env_ids),) + view.shape[1:])
        except (TypeError, ValueError):
            return False
        view[env_ids] = values
        return True

    def _restart_failed(self, replies: _Replies, stepped: list[int]) -> list[int]:
        """Restart the workers that failed (or give up after ``max_retry`` in a row of one); the ready envs of
        theirs outside ``stepped`` that start new episodes."""
        lost = []
        for worker, (ok, error) in replies.by_worker.items():
            if ok:
                self._failures[worker] = 0
                continue
            self._failures[worker] += 1
            envs = self._groups[worker]
            if self._failures[worker] > self._cfg.max_retry:
                raise EnvFailure(f"the worker of envs {envs} failed {self._failures[worker]} times in a row "
                                 f"(max_retry={self._cfg.max_retry}); last error: {error}")
            logger.warning(f"the worker of envs {envs} failed ({error.splitlines()[0] if error else error}); "
                           f"restarting it")
            lost += self._restart(worker, but=stepped)
        return lost

    def _restart(self, worker: int, but: Any = ()) -> list[int]:
        """Kill and start a worker again, its envs seeded anew; its ready envs not in ``but`` reset (their
        episodes broke off): returned."""
        self._stop(worker)
        time.sleep(self._cfg.retry_waiting_time)
        self._start(worker)
        for env_id in self._groups[worker]:
            self._reseed(env_id)
        lost = [i for i in self._groups[worker] if i in self._ready_obs and i not in but]
        for env_id in lost:
            self._ready_obs[env_id] = self._reset_env(env_id)
        if lost:
            logger.warning(f"envs {lost} started new episodes: their worker was restarted")
        return lost

    def _timesteps(self, env_ids: list[int], replies: _Replies) -> dict[int, BaseEnvTimestep]:
        """Each env's timestep from the shared columns and its worker's reply; an abnormal one where it failed."""
        timesteps = {}
        for worker, positions in replies.order.items():
            ok, extras = replies.by_worker[worker]
            for p, k in enumerate(positions):
                env_id = env_ids[k]
                if not ok:
                    timesteps[env_id] = BaseEnvTimestep(None, 0.0, True, {
                        'abnormal': True, 'env_id': env_id, 'error': extras.splitlines()[0] if extras else extras})
                    continue
                obs = extras['obs'][p] if 'obs' in extras else self._views['obs'][env_id].copy()
                reward = extras['reward'][p] if 'reward' in extras else float(self._views['reward'][env_id])
                timesteps[env_id] = BaseEnvTimestep(obs, reward, bool(self._views['done'][env_id]),
                                                    extras.get('info', {}).get(p, {}))
        return timesteps

    def _env_step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        env_ids = list(actions)
        replies = self._begin(env_ids, [actions[i] for i in env_ids], all_info=True)()
        self._restart_failed(replies, env_ids)
        return self._timesteps(env_ids, replies)

    def step_batch(self, env_ids: list[int], actions: np.ndarray) -> BaseEnvBatchTimestep:
        return self.step_batch_begin(env_ids, actions)()

    def step_batch_begin(self, env_ids: list[int], actions: np.ndarray) -> Callable[[], BaseEnvBatchTimestep]:
        """``step_batch`` sent to the workers; the call returned gathers it (other managers' steps can be begun
        meanwhile)."""
        self._check_ready(env_ids)
        env_ids = list(env_ids)
        gather = self._begin(env_ids, actions, all_info=self.info_stats is not None)
        return lambda: self._batch(env_ids, actions, gather())

    def _batch(self, env_ids: list[int], actions: np.ndarray, replies: _Replies) -> BaseEnvBatchTimestep:
        lost = self._restart_failed(replies, env_ids)
        if not replies.plain():  # a failure, or values outside the shared columns: env by env
            timesteps = self._timesteps(env_ids, replies)
            step = batch_of_timesteps(self, env_ids, self._stepped(dict(zip(env_ids, actions)), timesteps))
            return step._replace(restarted=step.restarted + lost)
        info = {}
        for worker, (_, extras) in replies.by_worker.items():
            if extras:
                positions = replies.order[worker]
                info.update({positions[p]: value for p, value in extras['info'].items()})
        index = np.asarray(env_ids, dtype=np.intp)
        stepped = (self._views['obs'][index], self._views['reward'][index], self._views['done'][index],
                   self._views['terminated'][index], info)
        return self._columns_stepped(env_ids, actions, stepped)


class _Replies(NamedTuple):
    """The workers' replies to a step: ``{worker: (ok, extras or error text)}``, and per worker the positions (in
    the step's env ids) of its envs, in the order its message listed them."""

    by_worker: dict[int, tuple[bool, Any]]
    order: dict[int, list[int]]

    def plain(self) -> bool:
        """Every worker stepped, and every value is in the shared columns."""
        return all(ok and 'obs' not in extras and 'reward' not in extras for ok, extras in self.by_worker.values())
