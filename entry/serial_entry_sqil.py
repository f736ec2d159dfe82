"""DI-engine's ``ding.entry.serial_entry_sqil``: its names here (``entry.pipeline.sqil`` holds them)."""
from __future__ import annotations

from .pipeline.sqil import serial_pipeline_sqil

__all__ = ['serial_pipeline_sqil']
