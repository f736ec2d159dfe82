"""DI-engine's ``ding.entry.serial_entry``: its names here (``entry.pipeline.serial`` holds them)."""
from __future__ import annotations

from .pipeline.serial import serial_pipeline

__all__ = ['serial_pipeline']
