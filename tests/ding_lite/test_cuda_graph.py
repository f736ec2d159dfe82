"""``CudaGraphStep``'s bookkeeping on the CPU, with a stand-in graph: what it copies in and out, when it captures
again, and its fallback. The real capture runs in ``tests/test_cuda.py``."""
from __future__ import annotations

import pytest
import torch

from ding_lite.data.collate import make_batch
from ding_lite.utils.cuda_graph import CudaGraphStep


class _Graph:
    """Stands in for ``torch.cuda.CUDAGraph``: ``replay()`` runs the recorded function and writes its outputs into
    the tensors recording returned, as a replay writes into the captured ones. Recording ran it once already: the
    first replay is that run (a capture records the step and its first replay runs it)."""

    def __init__(self, fn, outputs):
        self.fn, self.outputs, self.recorded = fn, outputs, True

    def replay(self):
        if self.recorded:
            self.recorded = False
            return
        names, vector, others = self.fn()
        self.outputs[1].copy_(vector)
        for key, value in others.items():
            self.outputs[2][key].copy_(value)


class _Recorded(CudaGraphStep):
    recordings = 0

    def _record(self, fn):
        type(self).recordings += 1
        outputs = fn()
        return _Graph(fn, outputs), outputs


def _step(batch):
    return {'total': batch.obs.sum(), 'mean': batch.reward.mean(), 'priority': batch.reward.abs() * 2,
            'count': torch.tensor(batch.obs.shape[0])}


def _batch(n=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return make_batch({'obs': torch.randn(n, 3, generator=g), 'reward': torch.randn(n, generator=g)})


def _assert_same(out, expected):
    assert out.keys() == expected.keys()
    for key in expected:
        torch.testing.assert_close(out[key], expected[key], rtol=0, atol=0)


def test_replays_copy_batches_in_and_outputs_out():
    _Recorded.recordings = 0
    step = _Recorded(_step, torch.device('cpu'), 'the step', warmup=0)
    first = step(_batch(seed=0))
    _assert_same(first, _step(_batch(seed=0)))
    kept = {k: v.clone() for k, v in first.items()}
    second = step(_batch(seed=1))
    _assert_same(second, _step(_batch(seed=1)))   # the new batch went into the static inputs
    _assert_same(first, kept)                      # and the last call's outputs were not overwritten
    assert _Recorded.recordings == 1
    _assert_same(step(_batch(n=6, seed=2)), _step(_batch(n=6, seed=2)))  # another shape: its own graph
    assert _Recorded.recordings == 2
    step.reset()
    step(_batch(seed=3))
    assert _Recorded.recordings == 3


def test_unfresh_replays_hand_out_the_graphs_own_outputs():
    """``fresh=False`` (a caller that copies the outputs away at once): the values are right, and they are the
    graph's own tensors, which the next replay overwrites."""
    step = _Recorded(_step, torch.device('cpu'), 'the forward', warmup=0, fresh=False)
    step(_batch(seed=0))
    first = step(_batch(seed=1))
    _assert_same(first, _step(_batch(seed=1)))
    second = step(_batch(seed=2))
    _assert_same(second, _step(_batch(seed=2)))
    assert second['priority'] is first['priority'] and torch.equal(first['priority'], second['priority'])


def test_a_failed_capture_warns_once_and_runs_eagerly():
    class Failing(CudaGraphStep):
        def _record(self, fn):
            raise RuntimeError('operation not permitted when stream is capturing\nmore')

    step = Failing(_step, torch.device('cpu'), "SACPolicy's update", warmup=0)
    with pytest.warns(RuntimeWarning, match=r"capturing SACPolicy's update as a CUDA graph failed \(RuntimeError: "
                                            r"operation not permitted when stream is capturing\); running it in eager"):
        _assert_same(step(_batch(seed=0)), _step(_batch(seed=0)))
    assert step.eager
    _assert_same(step(_batch(seed=1)), _step(_batch(seed=1)))
