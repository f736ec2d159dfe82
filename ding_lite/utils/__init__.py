"""Seeding, crash-safe file I/O, device resolution and torch.compile with a fallback."""
from __future__ import annotations

from .checkpoint import atomic_write_text, load_file, save_file, signals_deferred, to_safe
from .compile import compile_or_eager
from .device import resolve_device, to_device
from .seed import get_rng_state, set_deterministic, set_pkg_seed, set_rng_state

__all__ = ['atomic_write_text', 'load_file', 'save_file', 'signals_deferred', 'to_safe', 'compile_or_eager',
           'resolve_device', 'to_device', 'set_pkg_seed', 'get_rng_state', 'set_rng_state', 'set_deterministic']
