"""Pipelines and the command line."""
from __future__ import annotations

from .agent import Agent, load_policy
from .application import collect_demo_data, eval
from .parallel_entry import parallel_pipeline
from .serial_entry import serial_pipeline
from .serial_entry_sqil import serial_pipeline_sqil

__all__ = ['serial_pipeline', 'serial_pipeline_sqil', 'collect_demo_data', 'eval', 'parallel_pipeline', 'load_policy',
           'Agent']
