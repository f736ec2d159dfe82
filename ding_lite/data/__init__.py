"""Batches, collation and replay buffers."""
from __future__ import annotations

from .buffer import ReplayBuffer
from .collate import Batch, default_collate, default_decollate
from .prioritized import PrioritizedReplayBuffer

__all__ = ['Batch', 'default_collate', 'default_decollate', 'ReplayBuffer', 'PrioritizedReplayBuffer']
