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
