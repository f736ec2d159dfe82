"""What the env managers whose envs live in other processes share: the processes (started, stopped, killed with
the run), an env in the run's process for the spaces, the per-env primitives as commands, reseeding after a
restart, and the error a failure ends in."""
from __future__ import annotations

import multiprocessing as mp
import sys
import weakref
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from .base_env import BaseEnv
from .env_manager import BaseEnvManager


class EnvFailure(RuntimeError):
    """An env process raised, died or did not answer in time."""


def observation_layout(env: BaseEnv) -> tuple[tuple, str] | None:
    """``(shape, dtype)`` of ``env``'s observations where they are arrays of a Box space, else None. The dtype is
    read from a reset (``GymnasiumEnv`` gives float32 observations of a float64 space)."""
    space = env.observation_space
    if not isinstance(space, gym.spaces.Box):
        return None
    obs = env.reset()
    if type(obs) is not np.ndarray or obs.shape != tuple(space.shape):
        return None
    return tuple(obs.shape), obs.dtype.str


def env_command(env: BaseEnv, command: str, arg: Any) -> Any:
    """A worker process's answer to a command to one of its envs: 'reset' (the obs and the env's state before it),
    'seed', 'set_parameters' or 'load_state'."""
    if command == 'reset':
        state = env.state_dict() if hasattr(env, 'state_dict') else {}
        return env.reset(), state
    if command == 'seed':
        return env.seed(*arg)
    if command == 'set_parameters':
        return env.set_parameters(*arg)
    if command == 'load_state':
        return env.load_state_dict(arg) if hasattr(env, 'load_state_dict') else None
    raise ValueError(f"unknown env worker command {command!r}")


def kill(processes: list) -> None:
    """Kill the live ones of ``processes`` (the run's exit, or a manager collected without ``close``)."""
    for process in processes:
        if process is not None and process.is_alive():
            process.kill()
            process.join(1.0)


class ProcessEnvManager(BaseEnvManager):
    """Envs in ``slots`` processes of their own (an env each, or a batch each): subclasses start a slot's process
    (``_start``), answer a command to one env (``_call``) and close live processes (``_close``)."""

    config = dict(
        max_retry=5,                 # restarts in a row of one process (no successful step between) before giving up
        step_timeout=60.0,           # seconds a process may take for one step before it is killed and restarted
        reset_timeout=60.0,          # seconds for a reset (or seed / close)
        connect_timeout=60.0,        # seconds a new process has for its first answer (it builds its envs first)
        retry_waiting_time=0.1,      # seconds between a failure and the restart
        context=None,                # multiprocessing start method; None: 'fork' on Linux, else 'spawn'
    )

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: dict | None, slots: int) -> None:
        super().__init__(env_fn, cfg)
        self._ctx = mp.get_context(self._cfg.context or ('fork' if sys.platform.startswith('linux') else 'spawn'))
        self._processes: list[Any] = [None] * slots
        self._conns: list[Any] = [None] * slots
        self._failures = [0] * slots  # in a row, per process
        self._restart_count = [0] * self.env_num
        self._fresh: set[int] = set()  # started, not yet answered: their first command waits connect_timeout
        self._env_ref: BaseEnv | None = None
        self._finalizer = weakref.finalize(self, kill, self._processes)

    @property
    def restarts(self) -> int:
        """Envs started again after a failure, over all envs."""
        return sum(self._restart_count)

    @property
    def env_ref(self) -> BaseEnv:
        if self._env_ref is None:
            self._env_ref = self._env_fn[0]()
        return self._env_ref

    def _start(self, slot: int) -> None:
        raise NotImplementedError

    def _call(self, env_id: int, command: str, arg: Any = None) -> Any:
        """Env ``env_id``'s answer to ``command`` ('reset', 'seed', 'set_parameters', 'load_state'); ``EnvFailure``
        where its process fails."""
        raise NotImplementedError

    def _close(self, slots: list[int]) -> None:
        """Ask the live processes at ``slots`` to close their envs (they are killed after)."""
        raise NotImplementedError

    def _stop(self, slot: int) -> None:
        process, conn = self._processes[slot], self._conns[slot]
        if process is not None and process.is_alive():
            process.kill()
        if process is not None:
            process.join(1.0)
        if conn is not None:
            conn.close()
        self._processes[slot] = self._conns[slot] = None

    def _reseed(self, env_id: int) -> None:
        """An env started again: counted, and seeded from a new stream, so that its crashed episode is not replayed
        as it was."""
        self._restart_count[env_id] += 1
        if self._seeds is not None:
            self._env_seed(env_id, self._episode_seed(env_id) + 1_000_003 * self._restart_count[env_id],
                           self._dynamic_seed)

    # ---- primitives ----
    def _env_create(self) -> None:
        for slot, process in enumerate(self._processes):
            if process is None:
                self._start(slot)

    def _env_seed(self, env_id: int, seed: int, dynamic_seed: bool) -> None:
        self._call(env_id, 'seed', (seed, dynamic_seed))

    def _env_reset(self, env_id: int) -> tuple[Any, dict]:
        return self._call(env_id, 'reset')

    def _env_load_state(self, env_id: int, state: dict) -> None:
        if state:
            self._call(env_id, 'load_state', state)

    def _env_set_parameters(self, env_id: int, values: dict) -> None:
        self._call(env_id, 'set_parameters', (values, self.parameters.via))

    def _env_close(self) -> None:
        alive = [i for i, process in enumerate(self._processes) if process is not None and process.is_alive()]
        if alive:
            self._close(alive)
        for slot in range(len(self._processes)):
            self._stop(slot)
        if self._env_ref is not None:
            self._env_ref.close()
            self._env_ref = None
