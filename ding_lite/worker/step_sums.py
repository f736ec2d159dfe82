"""A learner's statistics summed over its steps between two logs, as tensors (no host sync until the log); and the
stacked seeds' sums, added for every seed in one pass."""
from __future__ import annotations

from typing import Mapping

import torch
from torch import Tensor

from ..utils.cuda_graph import GraphSums


class StepSums:
    """The sums of each learn step's statistics (its output but ``priority``) and the steps counted since the last
    ``take``. A step replayed from a graph that sums its statistics itself (``Summed``) adds nothing here: those
    sums are the graph's, read at ``take`` (``graph_sums=False``: never, for a learner that may drop a step)."""

    def __init__(self, graph_sums: bool = True) -> None:
        self._sums: dict[str, Tensor] = {}
        self.count = 0
        self._graph_sums = graph_sums
        self._graph: GraphSums | None = None  # the graph whose sums hold this interval's statistics of its names

    @property
    def sums(self) -> dict[str, Tensor]:
        """The sums so far (a graph's read out of it)."""
        if self._graph is not None:
            self._sums, self._graph = self._graph.read() | self._sums, None
        return self._sums

    @sums.setter
    def sums(self, sums: dict[str, Tensor]) -> None:
        self._sums, self._graph = sums, None

    def add(self, output: Mapping[str, Tensor]) -> None:
        """One step's ``output`` added (a fused in-place add where its fields are the sums' own); a ``Summed`` one's
        statistics are left to its graph's sums, which start again from this step where the interval begins."""
        graph = getattr(output, 'sums', None) if self._graph_sums else None
        if graph is not self._graph:
            held = self.sums  # another graph's, or none: its sums read out first
            if graph is not None and held.keys().isdisjoint(graph.summed):
                graph.restart()
                self._graph = graph
        _add(self._sums, output, self._graph.summed if self._graph is not None else ())
        self.count += 1

    def take(self) -> tuple[dict[str, Tensor], int]:
        """The sums and the count so far; empty after."""
        sums, count = self.sums, self.count
        self.sums, self.count = {}, 0
        return sums, count


class StackedSums:
    """The sums of the stacked seeds' learners as ``[S]`` rows: ``add`` sums every seed's step in one fused add of
    the stacked update's outputs, and learner k holds ``row(k)``, which counts its steps and reads its row."""

    def __init__(self, sums: list[StepSums]) -> None:
        """The seeds' sums so far stacked (each seed's learner takes its row instead of ``sums[k]``)."""
        keys = {frozenset(s.sums) for s in sums}
        self.sums = {key: torch.stack([s.sums[key] for s in sums]) for key in sums[0].sums} \
            if len(keys) == 1 else {}  # (seeds whose sums differ in fields start again: never in lockstep)
        self.rows = [_Row(self, k, s.count if self.sums else 0) for k, s in enumerate(sums)]

    def add(self, output: Mapping[str, Tensor]) -> None:
        """The stacked update's ``output`` (``[S, ...]`` fields) added to every seed's sums."""
        _add(self.sums, output)

    def release(self) -> list[StepSums]:
        """Each seed's sums and count as its own ``StepSums`` again (the rows unusable after)."""
        own = []
        for row in self.rows:
            sums = StepSums()
            sums.sums, sums.count = {key: value.clone() for key, value in row.sums.items()}, row.count
            own.append(sums)
        return own


class _Row(StepSums):
    """Seed ``k``'s sums in ``StackedSums``: its learner's ``add`` counts the step (the group added its output)."""

    def __init__(self, group: StackedSums, k: int, count: int) -> None:
        self._group, self._k, self.count = group, k, count

    @property
    def sums(self) -> dict[str, Tensor]:
        return {key: value[self._k] for key, value in self._group.sums.items()}

    def add(self, output: Mapping[str, Tensor]) -> None:
        self.count += 1

    def take(self) -> tuple[dict[str, Tensor], int]:
        sums, count = {key: value.clone() for key, value in self.sums.items()}, self.count
        for value in self.sums.values():
            value.zero_()
        self.count = 0
        return sums, count


def _add(sums: dict[str, Tensor], output: Mapping[str, Tensor], summed: frozenset | tuple = ()) -> None:
    """``output``'s statistics but ``priority`` and those ``summed`` elsewhere (a graph's) added to ``sums``."""
    stats = {key: value for key, value in output.items() if key != 'priority' and key not in summed}
    if sums and stats.keys() == sums.keys():  # the usual step
        torch._foreach_add_(list(sums.values()), [stats[key] for key in sums])
        return
    for key, value in stats.items():
        sums[key] = sums[key] + value if key in sums else value.detach().clone()
