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

    def _side_stream(self, batch):  # the warm-up calls, on the CPU's one stream
        return self._step(batch)


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


def _pushed(buffer, first, n):
    rows = torch.arange(first, first + n, dtype=torch.float32)
    buffer.push({'obs': rows[:, None].repeat(1, 3), 'reward': rows})


def test_a_draw_is_recorded_with_its_step_and_each_replay_draws_again_from_the_buffer_as_it_stands():
    """A ``Draw`` (the batch a captured update draws itself): nothing is copied in, each replay draws new slots
    below the buffer's count as it stands then (pushes since the capture included), and a buffer whose storage
    moved gets a graph of its own."""
    from ding_lite.data import GraphSampler, ReplayBuffer
    buffer = ReplayBuffer({'replay_buffer_size': 64})
    _pushed(buffer, 0, 4)
    sampler = GraphSampler(buffer)
    _Recorded.recordings = 0
    step = _Recorded(lambda draw: {'rows': draw.gather().reward}, torch.device('cpu'), 'the update', warmup=0)
    seen = [step(sampler(256))['rows']]
    _pushed(buffer, 4, 12)                           # after the capture: the replays read the new count
    seen += [step(sampler(256))['rows'] for _ in range(3)]
    assert _Recorded.recordings == 1 and not step._graphs[next(iter(step._graphs))].inputs
    assert set(seen[0].tolist()) == set(range(4))   # uniform below the count: each of the 4 rows in 256 draws
    assert set(torch.cat(seen[1:]).tolist()) == set(range(16))
    assert not torch.equal(seen[1], seen[2])         # a replay draws again
    for row, obs in zip(sampler(8).gather().reward, sampler(8).gather().obs):
        assert 0 <= row < 16 and obs[0] < 16       # (the gathered fields are rows of the storage)
    held = buffer.storage                            # (held: the new storage cannot reuse its memory)
    buffer.load_state_dict(buffer.state_dict())      # the storage reallocated: the old graph reads nothing of it
    assert held[('reward',)].data_ptr() != buffer.storage[('reward',)].data_ptr()
    step(sampler(256))
    assert _Recorded.recordings == 2
    with pytest.raises(ValueError, match='cannot draw 4 transitions from a replay buffer holding 0'):
        GraphSampler(ReplayBuffer({'replay_buffer_size': 8}))(4)


def test_a_summing_graph_adds_its_statistics_itself_and_a_learners_sums_read_them_once_per_log():
    """``sums=True`` (the drawn update's graph): each replay adds its 0-d statistics to sums kept in the graph, and
    returns its own tensors (not copies); ``StepSums`` leaves them there and reads them at ``take``. Across
    warm-up steps, a new capture (a reset) mid-interval and other fields, every interval's sums and counts are the
    plain ones'."""
    from ding_lite.utils.cuda_graph import Summed
    from ding_lite.worker.step_sums import StepSums
    step = _Recorded(_step, torch.device('cpu'), 'the update', warmup=1, sums=True)
    graphed, plain, expected, seed = StepSums(), StepSums(graph_sums=False), StepSums(graph_sums=False), 0
    for interval, steps in enumerate((3, 4, 5, 3)):
        for k in range(steps):
            if interval == 2 and k == 2:
                step.reset()                                         # a warm-up step, then a new capture
            batch, seed = _batch(seed=seed), seed + 1
            out = step(batch)
            assert isinstance(out, Summed) == (step._graphs != {} and not (interval == 2 and k == 2))
            graphed.add(out)
            plain.add(out)
            expected.add({key: value.clone() for key, value in _step(batch).items()})
            if interval == 1:
                entry = next(iter(step._graphs.values()))
                assert out['total'].data_ptr() == entry.vector.data_ptr()  # the graph's own tensor, not a copy
                assert graphed._graph is out.sums and 'total' not in graphed._sums  # nothing summed on the host
        want, count = expected.take()
        for got in (graphed.take(), plain.take()):
            assert got[1] == count == steps and got[0].keys() == want.keys() == {'total', 'mean', 'count'}
            for key in want:
                torch.testing.assert_close(got[0][key], want[key])
    assert _Recorded.recordings >= 2 and len(step._graphs) == 1


def test_a_summing_graph_without_warm_up_calls_or_with_other_statistics_hands_out_copies():
    """The sums' size comes from the warm-up calls: with none (or statistics that changed since) the graph keeps no
    sums and its outputs are copies, as a plain graph's."""
    from ding_lite.utils.cuda_graph import Summed
    step = _Recorded(_step, torch.device('cpu'), 'the update', warmup=0, sums=True)
    first = step(_batch(seed=0))
    second = step(_batch(seed=1))
    assert not isinstance(second, Summed) and first['total'].data_ptr() != second['total'].data_ptr()
    _assert_same(first, _step(_batch(seed=0)))

