"""Seeding of every random source the framework uses, and their states for checkpoints."""
from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import torch


def set_pkg_seed(seed: int, use_cuda: bool = True) -> None:
    """Seed python, numpy and torch (and CUDA when used)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if use_cuda and torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def set_deterministic(enabled: bool = True) -> None:
    """Bitwise-repeatable kernels on GPU (slower): deterministic algorithms, no cuDNN autotuning, and the cuBLAS
    workspace that makes its reductions repeatable. CPU runs are repeatable without it."""
    if enabled:
        os.environ.setdefault('CUBLAS_WORKSPACE_CONFIG', ':4096:8')
    torch.use_deterministic_algorithms(enabled, warn_only=False)
    torch.backends.cudnn.deterministic = enabled
    torch.backends.cudnn.benchmark = False if enabled else torch.backends.cudnn.benchmark


def get_rng_state() -> dict[str, Any]:
    """The states of python's, numpy's and torch's global generators, as tensors and plain containers."""
    kind, key, pos, has_gauss, gauss = np.random.get_state()
    state = {'python': random.getstate(), 'torch': torch.get_rng_state(),
             'numpy': {'kind': kind, 'key': torch.from_numpy(key.astype(np.int64)), 'pos': int(pos),
                       'has_gauss': int(has_gauss), 'gauss': float(gauss)}}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state['cuda'] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``get_rng_state`` returned."""
    version, internal, gauss = state['python']
    random.setstate((version, tuple(internal), gauss))
    numpy = state['numpy']
    np.random.set_state((numpy['kind'], numpy['key'].numpy().astype(np.uint32), numpy['pos'], numpy['has_gauss'],
                         numpy['gauss']))
    torch.set_rng_state(state['torch'])
    if 'cuda' in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state['cuda'])
