"""Seeding, crash-safe file I/O and device resolution."""
from __future__ import annotations

from .checkpoint import atomic_write_text, load_file, save_file
from .device import resolve_device
from .seed import set_pkg_seed

__all__ = ['atomic_write_text', 'load_file', 'save_file', 'resolve_device', 'set_pkg_seed']
