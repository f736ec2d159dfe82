"""A learn step replayed from a captured CUDA graph, with a fallback to eager mode."""
from __future__ import annotations

import warnings
from typing import Any, Callable, NamedTuple

import torch
from torch import Tensor

from ..data.collate import Batch, flatten_batch, unflatten_batch
from ..data.graph_draw import Draw

Step = Callable[[Batch], dict[str, Tensor]]


class GraphSums:
    """The running sums of a captured step's 0-d statistics (``names``), which each replay adds to ``total``
    inside the graph: nothing is summed on the host, and they are read once per log."""

    def __init__(self, names: list[str], total: Tensor, vector: Tensor) -> None:
        self.names, self.total, self._vector = names, total, vector
        self.summed = frozenset(names)

    def restart(self) -> None:
        """The sums start again from the last replay's statistics (call it before the next replay)."""
        self.total.copy_(self._vector)

    def read(self) -> dict[str, Tensor]:
        """The sums as they stand, copied out of the graph's memory."""
        return dict(zip(self.names, self.total.clone().unbind(0)))


class Summed(dict):
    """A replay's outputs (the graph's own tensors, which the next replay overwrites) and ``sums``: the running
    sums of its 0-d statistics, kept in the graph (``GraphSums``)."""
    __slots__ = ('sums',)

    def __init__(self, outputs: dict[str, Tensor], sums: GraphSums) -> None:
        super().__init__(outputs)
        self.sums = sums


class _Captured(NamedTuple):
    inputs: list[Tensor]         # static batch fields, in flatten_batch order
    graph: Any                   # torch.cuda.CUDAGraph (or a stand-in with replay())
    names: list[str]             # the 0-d statistics, stacked into vector
    vector: Tensor
    others: dict[str, Tensor]    # every other output (priority [B], ...)
    sums: GraphSums | None       # with ``sums=True``: the vector's running sums, added inside the graph


def cuda_graph_or_eager(step: Step, device: torch.device | str, what: str, warmup: int = 3) -> Step:
    """``CudaGraphStep(step)`` on a CUDA device; elsewhere ``step`` itself, with one warning naming ``what``."""
    if torch.device(device).type == 'cuda':
        return CudaGraphStep(step, torch.device(device), what, warmup)
    warnings.warn(f"{what}: CUDA graphs need a CUDA device and this one runs on {device}; running it in eager mode",
                  RuntimeWarning, stacklevel=2)
    return step


class CudaGraphStep:
    """``step(batch) -> {name: tensor}`` captured once as a CUDA graph, then replayed.

    The first ``warmup`` calls run eagerly on a side stream: they create what capture must not allocate (optimizer
    state, cuBLAS workspaces). The next call captures ``step`` on static copies of its batch; each later call
    copies its batch into them (one copy per field) and replays; a ``Draw`` is a batch the step draws itself, so the
    graph records the drawing and nothing is copied in. Outputs are copied out of the graph's memory (0-d statistics
    as one vector), so they outlive the next replay. A batch with other fields, shapes or dtypes (a ``Draw`` with
    another ``graph_key``) gets its own graph. Python values the step reads (learning rates, flags) are fixed at
    capture; call ``reset()`` when the tensors it updates are replaced (an optimizer's ``load_state_dict``): the next
    calls warm up and capture again. If capture fails, one warning and eager mode from then on. ``fresh=False``: a
    replay's outputs are the graph's own tensors, which the next replay overwrites (for a caller that copies them
    away on the same stream first). ``sums=True``: the graph also adds its 0-d statistics to running sums, and a
    replay returns ``Summed`` (the graph's own tensors and those sums, whose size the warm-up calls told).
    """

    def __init__(self, step: Step, device: torch.device, what: str, warmup: int = 3, fresh: bool = True,
                 sums: bool = False) -> None:
        self._step, self._device, self._what, self._warmup, self._fresh = step, device, what, warmup, fresh
        self._sums = sums
        self._graphs: dict[tuple, _Captured] = {}
        self._eager_calls = 0
        self._warm_names: list[str] | None = None  # the 0-d statistics of the last warm-up call
        self._warmup_stream: torch.cuda.Stream | None = None
        self.eager = False      # True once capture failed

    def reset(self) -> None:
        """Drop the captured graphs; the next calls warm up and capture again (a parameter reset's fresh optimizers
        have no state yet, which capture must not allocate)."""
        self._graphs.clear()
        self._eager_calls = 0

    def __call__(self, batch: Batch) -> dict[str, Tensor]:
        if self.eager:
            return self._step(batch)
        drawn = isinstance(batch, Draw)  # a batch the step draws itself, inside the graph: no inputs to copy
        flat = {} if drawn else flatten_batch(batch)
        key = ('drawn', batch.graph_key()) if drawn else tuple((path, tuple(v.shape), v.dtype)
                                                               for path, v in flat.items())
        entry = self._graphs.get(key)
        if entry is None:
            if self._eager_calls < self._warmup:
                self._eager_calls += 1
                output = self._side_stream(batch)
                self._warm_names = _statistics(output)
                return output
            entry = self._capture(flat, key, batch if drawn else type(batch) if isinstance(batch, dict) else None)
            if entry is None:
                return self._step(batch)
        elif flat:
            torch._foreach_copy_(entry.inputs, list(flat.values()))
        entry.graph.replay()
        vector, others = entry.vector, entry.others
        if entry.sums is not None:
            return Summed(dict(zip(entry.names, vector.unbind(0))) | others, entry.sums)
        if self._fresh:
            vector, others = vector.clone() if entry.names else vector, {k: v.clone() for k, v in others.items()}
        return (dict(zip(entry.names, vector.unbind(0))) if entry.names else {}) | others

    def _side_stream(self, batch: Batch) -> dict[str, Tensor]:
        stream = self._warmup_stream = self._warmup_stream or torch.cuda.Stream(self._device)
        stream.wait_stream(torch.cuda.current_stream(self._device))
        with torch.cuda.stream(stream):
            output = self._step(batch)
        torch.cuda.current_stream(self._device).wait_stream(stream)
        return output

    def _capture(self, flat: dict[tuple[str, ...], Tensor], key: tuple, kind: Any) -> _Captured | None:
        """Capture the step on static copies of ``flat``, given to it as a ``Batch``, or as a dict of the type
        ``kind`` where the caller's batch was one (a run of many seeds passes its own); ``kind`` a ``Draw``: the
        step is given it, and the graph records its drawing."""
        static = {path: value.to(self._device, copy=True) for path, value in flat.items()}
        warm = self._warm_names if self._sums else None  # the sums are zeros before the capture, which runs nothing
        total = torch.zeros(len(warm), device=self._device) if warm else None

        def given() -> Any:
            if isinstance(kind, Draw):
                return kind
            return unflatten_batch(static) if kind is None else _as_dict(static, kind)

        def packed_step() -> tuple[list[str], Tensor, dict[str, Tensor]]:
            output = self._step(given())
            names = _statistics(output)
            vector = torch.stack([output[k] for k in names]) if names else torch.zeros(0, device=self._device)
            if total is not None and names == warm:
                total.add_(vector)
            return names, vector, {k: v for k, v in output.items() if k not in names}

        try:
            graph, (names, vector, others) = self._record(packed_step)
        except Exception as error:  # torch raises many types for what cannot be captured
            self.eager = True
            reason = str(error).splitlines()[0] if str(error) else ''
            warnings.warn(f"capturing {self._what} as a CUDA graph failed ({type(error).__name__}: {reason}); "
                          f"running it in eager mode", RuntimeWarning, stacklevel=3)
            return None
        sums = GraphSums(names, total, vector) if total is not None and names == warm else None
        self._graphs[key] = entry = _Captured(list(static.values()), graph, names, vector, others, sums)
        return entry

    @staticmethod
    def _record(fn: Callable[[], Any]) -> tuple[Any, Any]:
        """``(graph, fn's outputs)``: ``fn`` captured (not run) as a graph whose ``replay()`` runs it."""
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode='thread_local'):  # other threads may use CUDA meanwhile
            output = fn()
        return graph, output


def _statistics(output: dict[str, Tensor]) -> list[str]:
    """The names of ``output``'s 0-d statistics (of the default float dtype), in its order."""
    return [k for k, v in output.items() if v.dim() == 0 and v.dtype == torch.get_default_dtype()]


def _as_dict(flat: dict[tuple[str, ...], Tensor], kind: type) -> dict:
    """``flat`` as a tree of dicts whose root is a ``kind``."""
    tree = kind()
    for path, tensor in flat.items():
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = tensor
    return tree
