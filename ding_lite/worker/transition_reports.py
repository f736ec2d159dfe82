"""ML-Agents' reports on collected transitions (``collector.report_collected``): a scorer's per-row reports of each
step's transitions summed over each env's episode, and at its end ``value_estimate`` (their mean over the episode's
steps) and ``<signal>_return`` (their sums) in its finished-episode record."""
from __future__ import annotations

from typing import Callable

import numpy as np

Scorer = Callable[[dict], dict[str, np.ndarray]]


class TransitionReports:
    """The reports of ``scorer`` (None: none) for ``env_num`` envs' episodes."""

    def __init__(self, scorer: Scorer | None, env_num: int) -> None:
        self.scorer, self.env_num = scorer, env_num
        self._sums: dict[str, np.ndarray] = {}  # per report, its sum over each env's episode so far

    def add(self, batch: dict[str, np.ndarray], env_ids: list[int]) -> None:
        """The reports of a step's transitions (``batch``'s rows, of the envs ``env_ids``) into their episodes'."""
        if self.scorer is None or not env_ids:
            return
        index = np.asarray(env_ids, np.int64)
        for name, values in self.scorer(batch).items():
            np.add.at(self._sums.setdefault(name, np.zeros(self.env_num)), index, values)

    def episode(self, env_id: int, length: int) -> dict[str, float]:
        """``env_id``'s episode of ``length`` steps: ``value_estimate`` its mean, the signals' ``<name>_return``."""
        length = max(int(length), 1)
        return {name if name == 'value_estimate' else f'{name}_return':
                float(sums[env_id] / length if name == 'value_estimate' else sums[env_id])
                for name, sums in self._sums.items()}

    def end(self, env_id: int) -> None:
        for sums in self._sums.values():
            sums[env_id] = 0.0
