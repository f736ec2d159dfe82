"""Device resolution for configs and tensors."""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Iterator

import torch
from torch import Tensor


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


def available_memory(device: torch.device) -> int | None:
    """Bytes free for new tensors on ``device``: the GPU's free memory, or Linux's ``MemAvailable`` (None where
    unknown)."""
    if device.type == 'cuda':
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open('/proc/meminfo') as f:
            for line in f:
                if line.startswith('MemAvailable:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def staged(flat: dict[tuple[str, ...], Tensor], dtypes: dict[tuple[str, ...], torch.dtype],
           device: torch.device) -> dict[tuple[str, ...], Tensor]:
    """``flat``'s fields as ``dtypes`` on ``device``. Host fields bound for another device travel as one copy per
    dtype (the fields one after another, each a contiguous piece of it there) instead of one per field: a
    transition's obs, action, reward and next obs make one host-to-device copy, not four, and it does not wait for
    the device's queued work."""
    out, groups = {}, {}
    for path, value in flat.items():
        if value.device == device or device.type == 'cpu':
            out[path] = value.to(device, dtypes[path])
        else:
            groups.setdefault(dtypes[path], []).append(path)
    for dtype, paths in groups.items():
        parts = [flat[p].to(dtype).reshape(-1) for p in paths]
        packed = to_device(parts[0] if len(parts) == 1 else torch.cat(parts), device)
        for path, part in zip(paths, packed.split([t.numel() for t in parts])):
            out[path] = part.view(flat[path].shape)
    return out
