"""Batches, collation and replay buffers."""
from __future__ import annotations

from .buffer import ReplayBuffer
from .collate import Batch, default_collate, default_decollate
from .demo import demo_buffer, load_demo, save_demo
from .prioritized import PrioritizedReplayBuffer

__all__ = ['Batch', 'default_collate', 'default_decollate', 'ReplayBuffer', 'PrioritizedReplayBuffer',
           'save_demo', 'load_demo', 'demo_buffer']
