"""Crash-safe file writes: write a temp file beside the target, fsync, then rename over it."""
from __future__ import annotations

import os
import tempfile
from typing import Any, Callable

import torch


def _atomic(path: str, write: Callable[[Any], None], mode: str) -> None:
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', suffix='.tmp', dir=directory)
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def atomic_write_text(path: str, text: str) -> None:
    """Replace ``path`` with ``text``; a crash leaves either the old file or the new one."""
    _atomic(path, lambda f: f.write(text), 'w')


def save_file(path: str, obj: Any) -> None:
    """``torch.save`` to ``path`` atomically."""
    _atomic(path, lambda f: torch.save(obj, f), 'wb')


def load_file(path: str, what: str = 'checkpoint') -> Any:
    """``torch.load`` with a clear error for a missing or unreadable file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what} not found: {path}")
    try:
        return torch.load(path, map_location='cpu', weights_only=False)
    except Exception as error:  # torch raises several types for truncated or foreign files
        raise ValueError(f"{what} {path} is not a readable torch file (truncated or foreign?): {error}") from error
