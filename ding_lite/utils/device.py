"""Device resolution for configs and tensors."""
from __future__ import annotations

import contextlib
import threading
import warnings
from typing import Any, Callable, Iterator

import torch


def resolve_device(cuda: bool, device: str | None = None) -> str:
    """An explicit ``device`` wins; otherwise ``'cuda'`` when ``cuda`` is set. Without CUDA, either falls back
    to ``'cpu'`` with a warning, so a config compiled on a GPU machine still runs elsewhere."""
    wanted = str(device) if device else ('cuda' if cuda else 'cpu')
    if wanted.startswith('cuda') and not torch.cuda.is_available():
        warnings.warn(f"device {wanted!r} was asked for but CUDA is not available; running on the CPU", stacklevel=2)
        return 'cpu'
    return wanted


def to_device(value: torch.Tensor, device: torch.device | str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``value.to(device, dtype)``; a host tensor bound for a CUDA device goes through pinned memory without a
    host sync, so the copy queues behind the stream's work instead of waiting for it (a pageable copy waits for
    every kernel queued on the stream, a learn step's included). torch's pinned-memory cache keeps the staging
    buffer until the copy is done."""
    device = torch.device(device)
    if device.type != 'cuda' or value.device.type != 'cpu':
        return value.to(device, dtype)
    if dtype is not None and value.dtype != dtype:
        value = value.to(dtype)
    block = STAGING.take(value.numel(), value.dtype)
    if block is None:  # a large one: pinned for this copy
        return value.pin_memory().to(device, non_blocking=True)
    block.copy_(value.reshape(-1))
    out = block.to(device, non_blocking=True).view(value.shape)
    STAGING.used(block, torch.cuda.current_stream(out.device))  # (an indexed device: no lookup of the current one)
    return out


def indexed(device: torch.device | str) -> torch.device:
    """``device`` with its index (a CUDA device without one: the current device). torch looks up the current
    device, tens of microseconds on some machines, wherever a stream call gets a device without an index."""
    device = torch.device(device)
    return torch.device('cuda', torch.cuda.current_device()) if device.type == 'cuda' and device.index is None \
        else device


@contextlib.contextmanager
def on_stream(stream: torch.cuda.Stream) -> Iterator[None]:
    """``torch.cuda.stream(stream)`` without its two lookups of the current device (see ``indexed``)."""
    previous = torch.cuda.current_stream(stream.device)
    torch.cuda.set_stream(stream)
    try:
        yield
    finally:
        torch.cuda.set_stream(previous)


def outputs_to_host(output: dict[str, Any], wait: Callable[[], None]) -> dict[str, Any]:
    """A forward's outputs (tensors, or lists and tuples of them) on the host: their copies queued on the current
    stream through reused pinned blocks, then ``wait()`` (the caller's sync with that stream), then host tensors of
    their own (a block is reused by later copies)."""
    copies = {name: [_queue_to_host(v) for v in value] if isinstance(value, (list, tuple)) else _queue_to_host(value)
              for name, value in output.items()}
    wait()
    return {name: type(output[name])(_taken(c) for c in copy) if isinstance(copy, list) else _taken(copy)
            for name, copy in copies.items()}


def _queue_to_host(value: Any) -> Any:
    if not isinstance(value, torch.Tensor) or not value.is_cuda:
        return value
    block = STAGING.take(value.numel(), value.dtype)
    if block is None:
        return value.to('cpu', non_blocking=True)
    block.copy_(value.reshape(-1), non_blocking=True)
    STAGING.used(block, torch.cuda.current_stream(value.device))
    return (block, value.shape)


def _taken(copy: Any) -> Any:
    return copy[0].view(copy[1]).clone() if isinstance(copy, tuple) else copy


class PinnedStaging:
    """Pinned host blocks reused for copies between the host and a GPU that do not wait for the GPU (pinning a new
    block per copy costs more than a small copy): blocks of each size and dtype in a ring, each handed out again
    once the copy that last used it is done (its event)."""

    SLOTS = 8
    MAX_BYTES = 1 << 20  # larger copies pin a block of their own

    def __init__(self) -> None:
        self._rings: dict[tuple[int, torch.dtype], list] = {}
        self._events: dict[int, torch.cuda.Event] = {}
        self._lock = threading.Lock()  # a learner thread and the main thread may stage at once

    def take(self, numel: int, dtype: torch.dtype) -> torch.Tensor | None:
        """A free pinned block of ``numel`` ``dtype`` elements (None for a large copy)."""
        if numel * dtype.itemsize > self.MAX_BYTES:
            return None
        with self._lock:
            ring = self._rings.get((numel, dtype))
            if ring is None:
                ring = self._rings[(numel, dtype)] = [[torch.empty(numel, dtype=dtype, pin_memory=True)
                                                       for _ in range(self.SLOTS)], 0]
            blocks, k = ring
            ring[1] = (k + 1) % len(blocks)
            event = self._events.get(id(blocks[k]))
        if event is not None:
            event.synchronize()  # the copy that last used it (long done, but for a GPU far behind)
        return blocks[k]

    def used(self, block: torch.Tensor, stream: torch.cuda.Stream) -> None:
        """``block``'s copy was queued on ``stream``: it is not handed out again before that copy is done."""
        event = self._events.get(id(block))
        if event is None:
            event = self._events[id(block)] = torch.cuda.Event()
        event.record(stream)


STAGING = PinnedStaging()
