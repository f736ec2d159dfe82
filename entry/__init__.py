"""Pipelines, their tools and the command line: ``pipeline/`` (the serial pipelines, one seed or many, SQIL, and the
run's steps and life cycle), ``parallel/`` (the Ray pipeline and its actors), ``tools/`` (acting with, evaluating,
exporting, plotting and finding runs), ``cli.py``. docs/ARCHITECTURE.md draws them."""
from __future__ import annotations

from .parallel.pipeline import parallel_pipeline
from .pipeline.offline import serial_pipeline_offline
from .pipeline.serial import serial_pipeline
from .pipeline.sqil import serial_pipeline_sqil
from .tools.agent import Agent, load_policy
from .tools.application import collect_demo_data, eval

__all__ = ['serial_pipeline', 'serial_pipeline_sqil', 'serial_pipeline_offline', 'collect_demo_data', 'eval',
           'parallel_pipeline', 'load_policy', 'Agent']
