"""DI-engine's ``ding.entry.parallel_entry``: its names here (``entry.parallel.pipeline`` holds them)."""
from __future__ import annotations

from .parallel.pipeline import parallel_pipeline

__all__ = ['parallel_pipeline']
