"""Batches, collation and replay buffers."""
from __future__ import annotations

from .buffer import ReplayBuffer, create_buffer
from .collate import Batch, default_collate, default_decollate
from .graph_draw import Draw, GraphSampler
from .demo import demo_buffer, load_demo, save_demo
from .mixing import mixed_sampler
from .prioritized import PrioritizedReplayBuffer
from .her import HerReplayBuffer

__all__ = ['Batch', 'default_collate', 'default_decollate', 'ReplayBuffer', 'PrioritizedReplayBuffer', 'HerReplayBuffer',
           'create_buffer', 'Draw', 'GraphSampler', 'save_demo', 'load_demo', 'demo_buffer', 'mixed_sampler']
