"""DI-engine's ``ding.entry.application_entry``: its names here (``entry.tools.application`` holds them)."""
from __future__ import annotations

from .tools.application import collect_demo_data, eval  # noqa: A004 (DI-engine's name)

__all__ = ['eval', 'collect_demo_data']
