"""Device resolution for configs and tensors."""
from __future__ import annotations

import warnings

import torch


def resolve_device(cuda: bool, device: str | None = None) -> str:
    """An explicit ``device`` wins; otherwise ``'cuda'`` when ``cuda`` is set and available, else ``'cpu'``."""
    if device:
        return str(device)
    if cuda and not torch.cuda.is_available():
        warnings.warn("policy.cuda=True but CUDA is not available; running on the CPU", stacklevel=2)
    return 'cuda' if cuda and torch.cuda.is_available() else 'cpu'
