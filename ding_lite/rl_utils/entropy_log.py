"""The collect distribution's entropy over a window of recent collect forwards (the collector's
``collector/entropy``): the forwards are kept by reference and their entropy computed only when it is logged."""
from __future__ import annotations

from collections import deque
from typing import Any, Callable

import torch
from torch import Tensor

ENTROPY_WINDOW = 1000  # the latest collect forwards that collector/entropy averages over

EntropyFn = Callable[[dict[str, Any], dict[str, Any]], 'Tensor | None']


class CollectEntropyLog:
    """The latest ``window`` collect forwards (outputs and the keywords they were called with)."""

    def __init__(self, window: int = ENTROPY_WINDOW) -> None:
        self.window = window
        self.recent: deque = deque(maxlen=window)

    def record(self, output: dict[str, Tensor], kwargs: dict[str, Any]) -> None:
        self.recent.append((output, kwargs))

    def pop(self, entropy: EntropyFn) -> float | None:
        """The mean of ``entropy(output, kwargs)`` (per row) over the forwards kept, which it then forgets (one host
        sync); None where ``entropy`` gives None."""
        recent, self.recent = self.recent, deque(maxlen=self.window)
        values = [value for output, kwargs in _joined(recent) if (value := entropy(output, kwargs)) is not None]
        return float(torch.cat([v.float().cpu() for v in values]).mean()) if values else None  # devices may mix


def _joined(recent: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Consecutive collect forwards called alike (the same plain keywords, outputs of one form) as one forward of
    all their rows: one entropy computation for them instead of one per forward (a kernel launch each on a GPU)."""
    groups: list[tuple[list[dict], dict, Any]] = []
    for output, kwargs in recent:
        form = _form(output) if all(isinstance(v, (bool, int, float, str, type(None))) for v in kwargs.values()) \
            else None
        if form is not None and groups and groups[-1][2] == form and groups[-1][1] == kwargs:
            groups[-1][0].append(output)
        else:
            groups.append(([output], kwargs, form))
    return [(outputs[0] if len(outputs) == 1 else _cat(outputs), kwargs) for outputs, kwargs, _ in groups]


def _form(value: Any) -> Any:
    """The nesting, row shapes and dtypes of a forward's output (None where a leaf is not a tensor with rows)."""
    if isinstance(value, Tensor):
        return (tuple(value.shape[1:]), value.dtype, value.device) if value.dim() else None
    if isinstance(value, dict):
        forms = tuple((k, _form(v)) for k, v in value.items())
        return None if any(f is None for _, f in forms) else ('dict', forms)
    if isinstance(value, (list, tuple)):
        forms = tuple(_form(v) for v in value)
        return None if any(f is None for f in forms) else (type(value).__name__, forms)
    return None


def _cat(outputs: list[Any]) -> Any:
    """Outputs of one ``_form`` as one, their rows in order."""
    first = outputs[0]
    if isinstance(first, Tensor):
        return torch.cat(outputs)
    if isinstance(first, dict):
        return {k: _cat([o[k] for o in outputs]) for k in first}
    return type(first)(_cat(list(parts)) for parts in zip(*outputs))
