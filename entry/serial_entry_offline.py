"""DI-engine's ``ding.entry.serial_entry_offline``: its names here (``entry.pipeline.offline`` holds them)."""
from __future__ import annotations

from .pipeline.offline import serial_pipeline_offline

__all__ = ['serial_pipeline_offline']
