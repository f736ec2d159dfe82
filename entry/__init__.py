"""Pipelines, their tools and the command line: ``pipeline/`` (the serial pipelines, one seed or many, SQIL,
offline training, the hyperparameter search, and the run's steps and life cycle), ``parallel/`` (the Ray pipeline
and its actors), ``tools/`` (acting with, evaluating, exporting, plotting and finding runs), ``cli.py``.
docs/ARCHITECTURE.md draws them.

The names below are imported on first use, so that ``ding_lite plot`` and the other tools start without torch.
DI-engine's module paths import too (``from entry.serial_entry_sqil import serial_pipeline_sqil``, as DI-engine's
``ding.entry.serial_entry_sqil``): each is the module that holds those names here (``DI_ENGINE_MODULES``)."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Any

_HOMES = {'serial_pipeline': '.pipeline.serial', 'serial_pipeline_sqil': '.pipeline.sqil',
          'serial_pipeline_offline': '.pipeline.offline', 'collect_demo_data': '.tools.application',
          'eval': '.tools.application', 'parallel_pipeline': '.parallel.pipeline', 'load_policy': '.tools.agent',
          'Agent': '.tools.agent', 'tune': '.pipeline.tune'}

__all__ = ['serial_pipeline', 'serial_pipeline_sqil', 'serial_pipeline_offline', 'collect_demo_data', 'eval',
           'parallel_pipeline', 'load_policy', 'Agent', 'tune']


# DI-engine's entry modules -> the modules here that hold their names
DI_ENGINE_MODULES = {'serial_entry': 'pipeline.serial', 'serial_entry_sqil': 'pipeline.sqil',
                     'serial_entry_offline': 'pipeline.offline', 'application_entry': 'tools.application',
                     'parallel_entry': 'parallel.pipeline'}


class _DIEngineModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import entry.<DI-engine's name>`` gives the module that holds its names (one module object under both
    names, imported when first asked for)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        package, _, name = fullname.partition('.')
        if package != __name__ or name not in DI_ENGINE_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module(f"{__name__}.{DI_ENGINE_MODULES[spec.name.partition('.')[2]]}")

    def exec_module(self, module: Any) -> None:
        pass  # imported already, under its own name


if not any(type(finder).__name__ == _DIEngineModules.__name__ for finder in sys.meta_path):  # (once, reloaded too)
    sys.meta_path.append(_DIEngineModules())


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'entry' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
