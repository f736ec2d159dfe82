"""A learn batch drawn inside the update's CUDA graph: the slots are drawn on the device and gathered there, so no
batch is copied into the graph's inputs."""
from __future__ import annotations

import torch

from .buffer import ReplayBuffer
from .collate import Batch


def draws_plainly(buffer: ReplayBuffer) -> bool:
    """Whether ``buffer`` samples as ``ReplayBuffer`` does: uniform slots gathered field by field (no priorities,
    sequences, relabelled goals or other rule of a subclass)."""
    kind = type(buffer)
    return kind.sample is ReplayBuffer.sample and kind._draw is ReplayBuffer._draw and \
        kind._gather is ReplayBuffer._gather and buffer.sequence_steps == 1


class GraphSampler:
    """``buffer.sample``'s stand-in where the update replays a CUDA graph: ``sampler(B)`` returns a ``Draw`` and
    does no device work, unless the buffer's count changed (one fill of a device scalar, which the graph reads).

    The graph draws ``B`` slots uniformly below that count and gathers them, a kernel per field: a replay reads the
    buffer as it stands then. Rows still waiting to be written (``push_chunk``) are not drawn, as ``sample``'s.
    """

    def __init__(self, buffer: ReplayBuffer) -> None:
        if not draws_plainly(buffer):
            raise ValueError(f"a graph draws uniform slots, and {type(buffer).__name__} samples by its own rule")
        self.buffer = buffer
        self._count = torch.zeros((), dtype=torch.float64, device=buffer.device)
        self._counted = 0

    def __call__(self, batch_size: int) -> Draw:
        count = self.buffer.cursor[1]
        if count == 0:
            self.buffer.flush()
            count = self.buffer.cursor[1]
        if batch_size <= 0 or count == 0:
            raise ValueError(f"cannot draw {batch_size} transitions from a replay buffer holding {count}")
        if count != self._counted:
            self._count.fill_(count)
            self._counted = count
        return Draw(self, batch_size)

    @property
    def count_ptr(self) -> int:
        """Where the count the graph reads lies (a graph recorded with another sampler reads another)."""
        return self._count.data_ptr()

    def gather(self, batch_size: int) -> Batch:
        """``batch_size`` slots drawn uniformly below the count and gathered (what the graph records)."""
        index = torch.rand(batch_size, dtype=torch.float64, device=self._count.device).mul_(self._count).long()
        return self.buffer._gather(index)  # the buffer's own gather (draws_plainly: ReplayBuffer's)


class Draw:
    """A learn batch not drawn yet: ``batch_size`` transitions that ``gather()`` draws and reads, inside the graph
    of the update it is given to (``graph_key`` tells its graphs apart: the batch size, where count and storage lie)."""

    __slots__ = ('sampler', 'batch_size')

    def __init__(self, sampler: GraphSampler, batch_size: int) -> None:
        self.sampler, self.batch_size = sampler, batch_size

    def gather(self) -> Batch:
        return self.sampler.gather(self.batch_size)

    def graph_key(self) -> tuple:
        storage = self.sampler.buffer.storage.values()
        return self.batch_size, self.sampler.count_ptr, *((t.data_ptr(), t.shape, t.dtype) for t in storage)

    def __contains__(self, key: str) -> bool:  # a batch's fields: none until drawn (no replay_buffer_idx)
        return False

