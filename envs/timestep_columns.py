"""Env steps as columns: the timesteps of a step of many envs as one ``BaseEnvBatchTimestep`` (an array per field,
a row per env), and the readiness check every manager shares."""
from __future__ import annotations

from typing import Any

import numpy as np

from ding_lite.data.collate import to_scalar, true_rows
from .base_env import BaseEnvBatchTimestep, BaseEnvTimestep


def batch_of_timesteps(manager: Any, env_ids: list[int], timesteps: dict[int, BaseEnvTimestep]
                       ) -> BaseEnvBatchTimestep:
    """``step``'s timesteps for the actions to ``env_ids`` as ``step_batch``'s columns, in that order."""
    if len(timesteps) != len(env_ids):
        raise RuntimeError(f"{type(manager).__name__} stepped envs {sorted(timesteps)} for actions to "
                           f"{sorted(env_ids)}: step_batch needs every given env back")
    steps = [timesteps[i] for i in env_ids]
    done = _scalar_column([t.done for t in steps], bool, 'done', env_ids)
    ended = true_rows(done)
    restarted = [env_ids[k] for k in ended if steps[k].info.get('abnormal')]
    if restarted:  # no rows for them
        rows = [k for k, i in enumerate(env_ids) if i not in restarted]
        env_ids, steps, done = [env_ids[k] for k in rows], [steps[k] for k in rows], done[rows]
        ended = np.flatnonzero(done).tolist()
    terminated = done.copy() if ended else done
    for k in ended:
        terminated[k] = not steps[k].info.get('TimeLimit.truncated', False)
    reward = _reward_column([t.reward for t in steps], env_ids)
    obs = np.array([t.obs for t in steps]) if steps else np.empty((0,))
    info = {env_ids[k]: steps[k].info for k in ended} if ended else None
    return BaseEnvBatchTimestep(env_ids, obs, reward, done, terminated, restarted, info)


def check_ready(ready_obs: dict[int, Any], env_ids: Any) -> None:
    """``ValueError`` naming the first of ``env_ids`` that is not waiting for an action."""
    for env_id in env_ids:
        if env_id not in ready_obs:
            raise ValueError(f"env {env_id} is not ready for an action (its episodes are finished, or it is in "
                             f"flight)")


def _scalar_column(values: list[Any], dtype: Any, what: str, env_ids: list[int]) -> np.ndarray:
    """One env's number per row (Python or 0-d values in one call; shape-(1,) arrays, DI-engine's, one by one)."""
    try:
        column = np.array(values, dtype=dtype)
    except (TypeError, ValueError):
        column = None
    if column is None or column.shape != (len(values),):
        column = np.array([to_scalar(v, f"env {i}'s {what}") for i, v in zip(env_ids, values)], dtype=dtype)
    return column


def _reward_column(values: list[Any], env_ids: list[int]) -> np.ndarray:
    """The envs' rewards as a column ``[N]``, or ``[N, D]`` where each is a vector (a multi-dimensional reward: the
    collector checks D against ``policy.reward_weights``)."""
    if values and np.ndim(values[0]) == 1 and np.size(values[0]) > 1:
        try:
            return np.array(values, dtype=np.float64)
        except ValueError:
            raise ValueError(f"envs {env_ids} returned rewards of different shapes: "
                             f"{sorted({np.shape(v) for v in values})}") from None
    return _scalar_column(values, np.float64, 'reward', env_ids)
