"""Device resolution for configs and tensors."""
from __future__ import annotations

import contextlib
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
    return value.pin_memory().to(device, non_blocking=True)


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
    stream without a sync (into pinned memory from torch's cache), then ``wait()`` (the caller's sync with that
    stream). (A ring of reused pinned blocks, tried instead, cost more host time per copy on an H200 than torch's
    pinned-memory cache.)"""
    host = {name: type(value)(_to_host(v) for v in value) if isinstance(value, (list, tuple)) else _to_host(value)
            for name, value in output.items()}
    wait()
    return host


def _to_host(value: Any) -> Any:
    return value.to('cpu', non_blocking=True) if isinstance(value, torch.Tensor) else value
