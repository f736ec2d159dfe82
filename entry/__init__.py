"""Pipelines, their tools and the command line: ``pipeline/`` (the serial pipelines, one seed or many, SQIL,
offline training, the hyperparameter search, and the run's steps and life cycle), ``parallel/`` (the Ray pipeline
and its actors), ``tools/`` (acting with, evaluating, exporting, plotting and finding runs), ``cli.py``.
docs/ARCHITECTURE.md draws them.

The names below are imported on first use, so that ``ding_lite plot`` and the other tools start without torch.
DI-engine's module paths are plain modules here too (``from entry.serial_entry_sqil import serial_pipeline_sqil``, as
DI-engine's ``ding.entry.serial_entry_sqil``), each handing on the names of the module that holds them."""
from __future__ import annotations

import importlib
from typing import Any

_HOMES = {'serial_pipeline': '.pipeline.serial', 'serial_pipeline_sqil': '.pipeline.sqil',
          'serial_pipeline_offline': '.pipeline.offline', 'collect_demo_data': '.tools.application',
          'eval': '.tools.application', 'parallel_pipeline': '.parallel.pipeline', 'load_policy': '.tools.agent',
          'Agent': '.tools.agent', 'tune': '.pipeline.tune'}

__all__ = ['serial_pipeline', 'serial_pipeline_sqil', 'serial_pipeline_offline', 'collect_demo_data', 'eval',
           'parallel_pipeline', 'load_policy', 'Agent', 'tune']


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'entry' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
