"""A worker process of ``SharedMemoryEnvManager``: a group of envs stepped per command, their actions, observations,
rewards and dones in arrays shared with the manager (a row per env)."""
from __future__ import annotations

import pickle
import signal
import traceback
from multiprocessing.connection import Connection
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from .base_env import BaseEnv
from .env_processes import env_command
from .timestep_columns import _reward_column, _scalar_column
from .worker_link import MESSAGE, STEP_ALL_INFO, Control, WorkerEnd

# a MESSAGE command's first byte: a step with pickled actions, a command to one env, close
STEP_PICKLED, COMMAND, CLOSE = b'P', b'C', b'X'
# replies: empty (stepped, nothing beyond the shared columns), b'K' + a pickle, b'E' + the error's text
OK, ERROR = b'K', b'E'


class Columns:
    """The shared arrays, a row per env: actions in (Box or Discrete spaces), observations out (a Box space),
    rewards, dones and terminations out. Made once by the manager; kept across its workers' restarts."""

    def __init__(self, ctx: Any, env_num: int, obs: tuple | None, act: tuple | None) -> None:
        self.env_num = env_num
        self.layouts = {'obs': obs, 'act': act, 'reward': ((), '<f8'), 'done': ((), '|b1'), 'terminated': ((), '|b1')}
        self.buffers = {key: ctx.RawArray('b', max(1, env_num * _nbytes(*layout)))
                        for key, layout in self.layouts.items() if layout is not None}

    def views(self) -> dict[str, np.ndarray]:
        """Numpy arrays over the buffers (in the process that calls it)."""
        return {key: np.frombuffer(buffer, dtype=self.layouts[key][1], count=self.env_num * int(
            np.prod(self.layouts[key][0], dtype=np.int64))).reshape((self.env_num,) + self.layouts[key][0])
            for key, buffer in self.buffers.items()}


def _nbytes(shape: tuple, dtype: str) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def action_layout(space: Any) -> tuple[tuple, str] | None:
    """``(shape, dtype)`` of actions that travel in a shared array (Box; Discrete as int64), else None."""
    if isinstance(space, gym.spaces.Box):
        return tuple(space.shape), np.dtype(space.dtype).str
    if isinstance(space, gym.spaces.Discrete):
        return (), np.dtype(np.int64).str
    return None


class _Group:
    """A worker's envs (rows ``first ..`` of the shared columns) and how it serves the manager's messages."""

    def __init__(self, envs: list[BaseEnv], first: int, views: dict[str, np.ndarray]) -> None:
        self.envs, self.first, self.views = envs, first, views
        kind = type(envs[0])
        self.step_many = all(type(env) is kind for env in envs) and getattr(kind, 'step_many', None)

    def serve(self, kind: int, payload: Any) -> bytes:
        """Answer a command: a step of the env ``rows`` (``payload``) on the shared actions, or a ``MESSAGE``."""
        if kind != MESSAGE:
            return self.step(payload, self.views['act'][self.first + payload], kind == STEP_ALL_INFO)
        tag = payload[:1]
        if tag == STEP_PICKLED:
            rows, actions, all_info = pickle.loads(payload[1:])
            return self.step(np.asarray(rows, dtype=np.intp), actions, all_info)
        if tag == CLOSE:
            return OK + pickle.dumps([env.close() for env in self.envs])
        command, row, arg = pickle.loads(payload[1:])
        return OK + pickle.dumps(env_command(self.envs[row], command, arg))

    def step(self, rows: np.ndarray, actions: Any, all_info: bool) -> bytes:
        """Step the envs at ``rows`` (row k of ``actions`` each), write the shared columns; what does not fit them
        (an ended episode's info, every info with ``all_info``, observations or rewards of other kinds) is
        pickled into the reply."""
        envs = [self.envs[k] for k in rows]
        stepped = None
        if self.step_many:
            stepped = self.step_many(envs, actions, all_info=True) if all_info else self.step_many(envs, actions)
        if stepped is None:
            stepped = _one_by_one(envs, actions, all_info, self.first + rows)
        obs, reward, done, terminated, info = stepped
        ids = self.first + rows
        extras: dict[str, Any] = {'info': info} if info else {}
        if not _put(self.views.get('obs'), ids, obs):
            extras['obs'] = list(obs)
        reward = _reward_column(reward, ids.tolist()) if not isinstance(reward, np.ndarray) else reward
        if reward.ndim == 1:
            self.views['reward'][ids] = reward
        else:  # a vector per env
            extras['reward'] = reward
        self.views['done'][ids] = done
        self.views['terminated'][ids] = terminated
        return OK + pickle.dumps(extras) if extras else b''


def _one_by_one(envs: list[BaseEnv], actions: Any, all_info: bool, ids: np.ndarray) -> tuple:
    """``step_many``'s columns from each env's own ``step``."""
    steps = [env.step(action) for env, action in zip(envs, actions)]
    done = _scalar_column([t.done for t in steps], bool, 'done', ids.tolist())
    terminated = done & ~np.array([bool(t.info.get('TimeLimit.truncated', False)) for t in steps])
    info = {k: t.info for k, t in enumerate(steps) if all_info or done[k]}
    return [t.obs for t in steps], [t.reward for t in steps], done, terminated, info


def _put(view: np.ndarray | None, ids: np.ndarray, obs: Any) -> bool:
    """Write ``obs`` (a row per id) into ``view`` where each is an array of the view's dtype and shape."""
    if view is None:
        return False
    if isinstance(obs, np.ndarray):
        fits = obs.dtype == view.dtype and obs.shape[1:] == view.shape[1:]
    else:
        fits = all(type(o) is np.ndarray and o.dtype == view.dtype and o.shape == view.shape[1:] for o in obs)
    if fits:
        view[ids] = obs
    return fits


def run_worker(env_fns: list[Callable[[], BaseEnv]], first: int, columns: Columns, control: Control, index: int,
               last: int, conn: Connection, parent_conn: Connection | None) -> None:
    """Worker ``index`` of a manager: build its envs (rows ``first ..`` of the columns) and serve its commands until
    it closes them, the pipe closes or the manager's process dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it closes the workers
    if parent_conn is not None:
        parent_conn.close()
    end = WorkerEnd(control, index, conn, last)
    group, failure = None, b''
    try:
        group = _Group([fn() for fn in env_fns], first, columns.views())
    except Exception as error:  # reported on every command: the manager restarts the worker or gives up
        failure = ERROR + f"env creation failed: {type(error).__name__}: {error}".encode()
    try:
        while (command := end.next()) is not None:
            kind, payload = command
            try:
                body = group.serve(kind, payload) if group is not None else failure
            except Exception as error:
                body = ERROR + f"{type(error).__name__}: {error}\n{traceback.format_exc()}".encode()
            end.reply(body)
            if kind == MESSAGE and payload[:1] == CLOSE:
                break
    except (EOFError, BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        pass
