"""Pipelines and the command line."""
from __future__ import annotations

from .application import eval
from .serial_entry import serial_pipeline

__all__ = ['serial_pipeline', 'eval']
