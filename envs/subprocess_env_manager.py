"""One process per env, observations through shared memory, and restarts of envs that crash or hang."""
from __future__ import annotations

import logging
import os
import signal
import time
import traceback
import warnings
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

import numpy as np

from ding_lite.data.collate import to_ndarray
from ding_lite.registry import ENV_MANAGER_REGISTRY
from ding_lite.utils.default_config import ConfigError, ConfigWarning
from .base_env import BaseEnv, BaseEnvBatchTimestep, BaseEnvTimestep
from .env_processes import EnvFailure, ProcessEnvManager, env_command, observation_layout
from .timestep_columns import batch_of_timesteps

logger = logging.getLogger(__name__)


class _InSharedMemory:
    """Stands for an observation the worker wrote into the shared buffer."""


def _worker(env_fn: Callable[[], BaseEnv], conn: Connection, parent_conn: Connection | None, shm: Any,
            shape: tuple | None, dtype: str | None) -> None:
    """Serve ``(command, argument)`` requests for one env until 'close', the pipe closes or the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it closes the workers
    if parent_conn is not None:
        parent_conn.close()
    parent = os.getppid()
    view = np.frombuffer(shm, dtype=dtype).reshape(shape) if shm is not None else None

    def put(obs: Any) -> Any:
        if view is not None and isinstance(obs, np.ndarray) and obs.shape == view.shape and obs.dtype == view.dtype:
            view[...] = obs
            return _InSharedMemory()
        return obs

    env, env_error = None, None
    try:
        env = env_fn()
    except Exception as error:  # reported on every request: the parent restarts or gives up
        env_error = f"{type(error).__name__}: {error}"
    try:
        while True:
            if not conn.poll(1.0):
                if os.getppid() != parent:  # the parent died without closing us
                    break
                continue
            command, arg = conn.recv()
            if env is None:
                conn.send(('error', f"env creation failed: {env_error}"))
                continue
            try:
                if command == 'step':
                    timestep = env.step(arg)
                    result = timestep._replace(obs=put(timestep.obs))
                elif command == 'close':
                    conn.send(('ok', env.close()))
                    break
                else:
                    result = env_command(env, command, arg)
                    if command == 'reset':
                        result = (put(result[0]), result[1])
            except Exception as error:
                conn.send(('error', f"{type(error).__name__}: {error}\n{traceback.format_exc()}"))
                continue
            conn.send(('ok', result))
    except (EOFError, BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        pass


@ENV_MANAGER_REGISTRY.register('subprocess')
class SubprocessEnvManager(ProcessEnvManager):
    """Each env in its own process, all stepped at once; an env that raises, dies or hangs is killed and restarted.

    The step that broke returns ``done=True`` with ``info['abnormal']`` (no transition: the collector drops it) and
    the restarted env starts a new episode. ``max_retry`` failures in a row of one env (no good step between)
    stop the run with an error naming the env and its last error. Observations of a Box space travel through
    shared memory; the rest through pipes.
    """

    config = dict(
        type='subprocess',           # the registered env manager name
        max_retry=5,                 # restarts in a row of one env (no successful step between) before giving up
        step_timeout=60.0,           # seconds an env may take for one step before it is killed and restarted
        shared_memory=True,          # observations of a Box space through shared memory
        copy_on_get=True,            # DI-engine's key: observations are always copied out of shared memory
        reset_inplace=False,         # DI-engine's key: resets always happen in place here
        wait_num=None,               # DI-engine's async key: None only (this manager steps every given env together)
        step_wait_timeout=None,      # DI-engine's async key: None only (see step_timeout)
        connect_timeout=60.0,        # seconds a new env process has for its first answer (it builds its env first)
    )

    @classmethod
    def check_config(cls, cfg: dict) -> None:
        """Refuse DI-engine's async settings, which this synchronous manager cannot honour."""
        for key, instead in (('wait_num', 'every env steps together'), ('step_wait_timeout', 'use step_timeout')):
            if cfg.get(key) is not None:
                raise ConfigError(f"env.manager.{key}={cfg[key]!r} is DI-engine's asynchronous stepping, which the "
                                  f"subprocess manager does not do ({instead}); set it to None")
        for key, value in (('copy_on_get', False), ('reset_inplace', True)):
            if cfg.get(key) is value:
                warnings.warn(f"env.manager.{key}={value} is DI-engine's; here observations are always copied out of "
                              f"shared memory and resets happen in place: ignored", ConfigWarning, stacklevel=3)

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: dict | None = None) -> None:
        super().__init__(env_fn, cfg, slots=len(env_fn))
        self._shm: list[Any] = [None] * self.env_num
        self._layout: tuple[tuple, str] | None | bool = False  # False: not read yet

    # ---- process handling ----
    def _obs_layout(self) -> tuple[tuple, str] | None:
        """``(shape, dtype)`` of the shared observation buffers, or None (pipes); read once."""
        if self._layout is False:
            self._layout = observation_layout(self.env_ref) if self._cfg.shared_memory else None
        return self._layout

    def _start(self, env_id: int) -> None:
        layout = self._obs_layout()
        if layout is not None and self._shm[env_id] is None:
            nbytes = int(np.prod(layout[0], dtype=np.int64)) * np.dtype(layout[1]).itemsize
            self._shm[env_id] = self._ctx.RawArray('b', max(nbytes, 1))
        parent_conn, child_conn = self._ctx.Pipe()
        shape, dtype = layout if layout is not None else (None, None)
        process = self._ctx.Process(target=_worker, daemon=True, name=f'ding_lite_env_{env_id}',
                                    args=(self._env_fn[env_id], child_conn, parent_conn, self._shm[env_id], shape,
                                          dtype))
        process.start()
        child_conn.close()  # the worker holds the only other end: its death is an EOF here
        self._processes[env_id], self._conns[env_id] = process, parent_conn
        self._fresh.add(env_id)

    def _request(self, requests: dict[int, tuple[str, Any]], timeout: float) -> dict[int, tuple[bool, Any]]:
        """Send each env its ``(command, arg)`` and gather ``{env_id: (ok, result or error text)}`` by ``timeout``."""
        return self._send(requests, timeout)()

    def _send(self, requests: dict[int, tuple[str, Any]], timeout: float
              ) -> Callable[[], dict[int, tuple[bool, Any]]]:
        """Send each env its ``(command, arg)``; the call returned gathers the replies (``_request``'s), waiting
        until ``timeout`` after the send."""
        replies, pending = {}, {}
        for env_id, request in requests.items():
            try:
                self._conns[env_id].send(request)
                pending[self._conns[env_id]] = env_id
            except (OSError, BrokenPipeError) as error:
                replies[env_id] = (False, f"its process is gone ({error})")
        if self._fresh & set(requests):
            timeout = max(timeout, self._cfg.connect_timeout)
        self._fresh -= set(requests)
        deadline = time.monotonic() + timeout
        return lambda: self._gather(requests, replies, pending, deadline, timeout)

    def _gather(self, requests: dict[int, tuple[str, Any]], replies: dict[int, tuple[bool, Any]],
                pending: dict[Connection, int], deadline: float, timeout: float) -> dict[int, tuple[bool, Any]]:
        while pending:
            ready = wait(list(pending), timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                for env_id in pending.values():
                    replies[env_id] = (False, f"no answer to {requests[env_id][0]!r} within {timeout:g} s")
                break
            for conn in ready:
                env_id = pending.pop(conn)
                try:
                    status, result = conn.recv()
                    replies[env_id] = (status == 'ok', result)
                except (EOFError, OSError):
                    self._processes[env_id].join(0.5)
                    replies[env_id] = (False, f"its process died (exit code {self._processes[env_id].exitcode})")
        return replies

    def _call(self, env_id: int, command: str, arg: Any = None) -> Any:
        ok, result = self._request({env_id: (command, arg)}, self._cfg.reset_timeout)[env_id]
        if not ok:
            raise EnvFailure(f"env {env_id} failed in {command!r}: {result}")
        return result

    def _obs(self, env_id: int, obs: Any) -> Any:
        if isinstance(obs, _InSharedMemory):
            layout = self._obs_layout()
            return np.frombuffer(self._shm[env_id], dtype=layout[1]).reshape(layout[0]).copy()
        return obs

    # ---- primitives ----
    def _env_reset(self, env_id: int) -> tuple[Any, dict]:
        obs, state = self._call(env_id, 'reset')
        return self._obs(env_id, obs), state

    def _env_step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        return self._env_step_begin(actions)()

    def _env_step_begin(self, actions: dict[int, Any]) -> Callable[[], dict[int, BaseEnvTimestep]]:
        """The envs' steps sent; the call returned gathers their timesteps (restarting the envs that failed)."""
        # numpy, not tensors, through the pipe: pickling a tensor moves it into shared memory (milliseconds)
        gather = self._send({i: ('step', to_ndarray(a)) for i, a in actions.items()}, self._cfg.step_timeout)
        return lambda: self._timesteps(actions, gather())

    def step_batch_begin(self, env_ids: list[int], actions: np.ndarray) -> Callable[[], BaseEnvBatchTimestep]:
        """``step_batch`` sent to the envs' processes; the call returned gathers it."""
        self._check_ready(env_ids)
        given = dict(zip(env_ids, actions))
        gather = self._env_step_begin(given)
        return lambda: batch_of_timesteps(self, env_ids, self._stepped(given, gather()))

    def _timesteps(self, actions: dict[int, Any], replies: dict[int, tuple[bool, Any]]
                   ) -> dict[int, BaseEnvTimestep]:
        timesteps = {}
        for env_id in actions:
            ok, result = replies[env_id]
            if ok:
                self._failures[env_id] = 0
                timesteps[env_id] = result._replace(obs=self._obs(env_id, result.obs))
            else:
                timesteps[env_id] = self._restart_after(env_id, result)
        return timesteps

    def _env_step_many(self, env_ids: list[int], actions: np.ndarray) -> None:
        return None  # the envs live in their processes: each steps on its own

    def _restart_after(self, env_id: int, error: str) -> BaseEnvTimestep:
        """Kill and restart a failed env; an abnormal timestep closes its episode."""
        self._failures[env_id] += 1
        first_line = error.splitlines()[0] if error else error
        if self._failures[env_id] > self._cfg.max_retry:
            raise EnvFailure(f"env {env_id} failed {self._failures[env_id]} times in a row (max_retry="
                             f"{self._cfg.max_retry}); last error: {error}")
        logger.warning(f"env {env_id} failed ({first_line}); restarting its process")
        self._env_recreate(env_id)
        return BaseEnvTimestep(None, 0.0, True, {'abnormal': True, 'env_id': env_id, 'error': first_line})

    def _env_recreate(self, env_id: int) -> None:
        self._stop(env_id)
        time.sleep(self._cfg.retry_waiting_time)
        self._start(env_id)
        self._reseed(env_id)

    def _close(self, slots: list[int]) -> None:
        self._request({i: ('close', None) for i in slots}, min(self._cfg.reset_timeout, 5.0))
