"""The seeds of one stacked run still training: their buffers' shared tensors (``SeedBuffers``) and the ``SeedAxis``
that acts and learns for all of them; a seed that ends leaves the group, and the axis is stacked again."""
from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, Callable, Mapping

from torch import Tensor

from ding_lite.config import reward_clip_bounds
from ding_lite.data import ReplayBuffer
from ding_lite.data.collate import Rows
from ding_lite.data.seed_buffers import SeedBuffers
from ding_lite.worker import InteractionSerialEvaluator, SampleSerialCollector
from ding_lite.worker.collect_round import StepsTogether
from ding_lite.worker.step_sums import StackedSums
from ..kit.life_cycle import after_run, summarise
from .seed_axis import Fields, SeedAxis, StepsApart


class SeedGroup:
    """The seeds still training and the ``SeedAxis`` over them (none while one seed is left: it trains alone)."""

    def __init__(self, runs: list[SimpleNamespace]) -> None:
        self.active = list(runs)
        self._buffer_runs: list[SimpleNamespace] = []  # the seeds whose buffers share the tensors, in their order
        self._buffers: SeedBuffers | None | bool = None  # built at the first sample; False: the seeds cannot share
        for run in runs:
            run.own_forward = run.learner.policy.forward  # the seed's learn step, while it trains alone
        self._axis: SeedAxis | None = None
        self._stale = True  # stacked at the first update: seeds that ended before it never are
        self._apart = False  # the seeds' optimizers stood at different steps at a restack (said once)
        self._sums: StackedSums | None = None  # the stacked seeds' statistics, a row per learner
        self._stacked_learners: list[Any] = []
        self.together: StepsTogether | None = None

    def sample(self, runs: list[SimpleNamespace], batch_size: int) -> list[Any] | Fields:
        """The seeds' batches: one gather from the buffers' shared tensors (``[S, B, ...]`` fields) where every
        seed samples its buffer plainly and the seeds share an update; else each seed's own sampler."""
        if self._stale:
            self._restack()
        buffers = self._shared_buffers() if self._axis is not None else None
        if buffers is None:
            return [run.sample(batch_size) for run in runs]
        seat = {id(run): k for k, run in enumerate(self._buffer_runs)}
        return Fields(buffers.sample([seat[id(run)] for run in runs], batch_size))

    def push(self, runs: list[SimpleNamespace], batches: list[dict[str, Any]]) -> bool:
        """Every seed's collected batch in one push where their buffers share the tensors (as sampling made them)
        and stand alike, and no reward clip changes what is stored; False where each seed's ``store`` pushes its
        own."""
        buffers = self._buffers
        if self._stale or self._axis is None or not buffers or \
                [id(run) for run in runs] != [id(run) for run in self._buffer_runs] or \
                any(reward_clip_bounds(run.cfg.env.get('reward_clip')) is not None for run in runs):
            return False
        return buffers.push_all(batches)

    def _shared_buffers(self) -> SeedBuffers | None:
        if self._buffers is False:
            return None
        if self._buffers is None or not self._buffers.intact():
            self._buffer_runs = list(self.active)  # (a resumed seed that had stopped may hold no transitions)
            plain = all(getattr(run.sample, '__self__', None) is run.buffer and
                        type(run.buffer).sample is ReplayBuffer.sample for run in self._buffer_runs)
            try:
                self._buffers = SeedBuffers([run.buffer for run in self._buffer_runs]) if plain else False
            except ValueError:  # fields of another form (nested): each seed samples its own
                self._buffers = False
        return self._buffers or None

    def update(self, runs: list[SimpleNamespace], batches: list[Any] | Fields) -> list[Mapping[str, Tensor] | None]:
        """Seed outputs of one stacked update (None for a seed that trains alone: its learner runs it), their
        statistics added to every seed's learner in one pass."""
        if self._stale:
            self._restack()
        if self._axis is None:
            return [None] * len(runs)
        if len(runs) != len(self.active):
            raise RuntimeError("the seeds of one run learn in lockstep; a seed fell behind")
        output = self._axis.forward(batches)
        self._sums.add(output)
        return [Rows(output, k) for k in range(len(runs))]

    def joint(self, runs: list[SimpleNamespace]) -> bool:
        """True where ``runs`` (every active seed) can act through one forward of the axis: plain collectors and
        evaluators, and the policy's own batch forwards."""
        if self._stale:
            self._restack()
        return self._axis is not None and len(runs) == len(self.active) and all(
            type(run.collector).collect_batch is SampleSerialCollector.collect_batch and
            type(run.evaluator).eval is InteractionSerialEvaluator.eval and
            type(run.evaluator).run_episodes is InteractionSerialEvaluator.run_episodes for run in runs) and \
            all(self._axis.can_act(mode) for mode in ('collect', 'eval'))

    def forward(self, mode: str, runs: list[SimpleNamespace]) -> Callable[[list[Tensor], list[int]], list[dict]]:
        """``collect_batches``' and ``run_episodes_together``'s forward: one ``SeedAxis.act`` for ``runs``."""
        seat = {id(run): k for k, run in enumerate(self.active)}

        def act(obs: list[Tensor], which: list[int]) -> list[dict]:
            stacked: list[Tensor | None] = [None] * len(self.active)
            for j, o in zip(which, obs):
                stacked[seat[id(runs[j])]] = o
            outputs = self._axis.act(mode, stacked)
            return [outputs[seat[id(runs[j])]] for j in which]
        return act

    def finish(self, run: SimpleNamespace, interrupted: threading.Event, ended: str | None = None) -> None:
        """End one seed as a single run ends: its after-run checkpoint, a resume point (recording how it ``ended``:
        ``'stop_value'``, ``'budget'``), its summary."""
        if not interrupted.is_set():
            run.loop.ended = ended
        self.active = [active for active in self.active if active is not run]  # (namespaces: by identity)
        run.learner.policy.forward = run.own_forward
        self.unstack()  # the seed gets its own tensors back before its last checkpoint
        after_run(run.cfg, run.learner, interrupted.is_set())
        summarise(run.cfg, run.learner, run.collector.envstep, run.evaluator, interrupted=interrupted.is_set())

    def unstack(self) -> None:
        """Give every seed its own tensors again (a seed leaving, or the seeds' parameters reset); stacked again at
        the next update."""
        if self._axis is not None:
            self._axis.release()
            self._axis = None
            for learner, own in zip(self._stacked_learners, self._sums.release()):
                learner.step_sums = own
        self._stale = True

    def _restack(self) -> None:
        self._stale = False
        try:
            self._axis = SeedAxis([run.policy for run in self.active]) if len(self.active) > 1 else None
        except StepsApart as apart:  # rows that reset their parameters at different env steps
            if not self._apart:
                print(f"the seeds now train one after another: {apart}", flush=True)
            self._apart, self._axis = True, None
        for run in self.active:
            run.learner.policy.forward = run.own_forward if self._axis is None else \
                (lambda data, run=run: run.output)
        self.together = None
        if self._axis is not None:  # the seeds' env steps counted in one pass, their statistics summed in one
            self.together = StepsTogether([run.collector for run in self.active])
            self._stacked_learners = [run.learner for run in self.active]
            self._sums = StackedSums([learner.step_sums for learner in self._stacked_learners])
            for learner, row in zip(self._stacked_learners, self._sums.rows):
                learner.step_sums = row
