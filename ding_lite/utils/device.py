"""Device resolution for configs and tensors."""
from __future__ import annotations

import warnings

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
