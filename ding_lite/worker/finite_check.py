"""Non-finite values from an env, caught where a transition is made, before anything enters a buffer."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

FIELDS = ('reward', 'obs', 'next_obs', 'action')  # the order a report names them in


class NonFiniteEnvError(FloatingPointError):
    """An env gave (or the policy acted with) a NaN or infinite value; nothing of that step was stored."""


def _finite(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, Tensor):
        return not value.is_floating_point() or bool(torch.isfinite(value).all())
    array = np.asarray(value)
    return array.dtype.kind not in 'fc' or bool(np.isfinite(array).all())


def nonfinite_fields(transition: dict[str, Any]) -> list[str]:
    """The fields of one transition holding a NaN or an infinity (none: ``[]``)."""
    return [k for k in FIELDS if k in transition and not _finite(transition[k])]


def all_finite(values: list[Any]) -> bool:
    """Whether every one of ``values`` (same-shaped float arrays or numbers, one per env) is finite: one
    ``isfinite`` over them all; False where they do not stack (the caller then checks each)."""
    try:
        array = np.asarray(values)
    except ValueError:  # ragged, or dicts
        return False
    return array.dtype.kind in 'iub' or array.dtype.kind in 'fc' and bool(np.isfinite(array).all())


def nonfinite_rows(columns: dict[str, np.ndarray]) -> np.ndarray | None:
    """Per row of ``columns`` (a transition field each), whether it holds a NaN or an infinity; None if no row
    does (the common case: one count of isfinite per float field)."""
    arrays = [array for key in FIELDS if (array := columns.get(key)) is not None and array.dtype.kind in 'fc']
    # isfinite counted, not reduced: in a step of envs a ufunc reduction's code is cold (several us a call)
    if all(np.count_nonzero(np.isfinite(array)) == array.size for array in arrays):
        return None
    bad = None
    for array in arrays:
        if np.isfinite(array).all():
            continue
        rows = ~np.isfinite(array.reshape(len(array), -1)).all(1)
        bad = rows if bad is None else bad | rows
    return bad


def nonfinite_error(source: str, where: str, transition: dict[str, Any]) -> NonFiniteEnvError:
    """The error for one bad transition of ``source`` (``"env 'Id' (env 3)"``) ``where`` it happened (``"at env step
    N"``): each bad field with its value, and the two ways on."""
    fields = nonfinite_fields(transition)
    shown = ', '.join(f"{k}={_show(transition[k])}" for k in fields)
    whose = 'the policy gave' if fields == ['action'] else f"{source} returned"
    return NonFiniteEnvError(
        f"{whose} a non-finite {' and '.join(fields)} {where}: {shown}. Nothing of that step entered the replay "
        f"buffer. Make the env return finite values, or set policy.learn.learner.on_nonfinite='skip' to drop such "
        f"transitions (counted in the collector's log as nonfinite_dropped_count)")


def env_name(env: Any) -> str:
    """``"'Pendulum-v1'"``: the id of an env, or of an env manager's envs (their class name where they have none)."""
    ref = getattr(env, 'env_ref', env)
    return repr(getattr(ref, 'env_id', type(ref).__name__))


def env_label(manager: Any, env_id: int) -> str:
    """``"env 'Pendulum-v1' (env 3)"``: the id of an env manager's envs and the index of one of them."""
    return f"env {env_name(manager)} (env {env_id})"


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return '{' + ', '.join(f"{k!r}: {_show(v)}" for k, v in value.items() if not _finite(v)) + '}'
    array = np.asarray(value.detach().cpu() if isinstance(value, Tensor) else value)
    return repr(array.item()) if array.size == 1 else np.array2string(array, threshold=8, precision=4)
