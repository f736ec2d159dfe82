"""Seeding of every random source the framework uses."""
from __future__ import annotations

import random

import numpy as np
import torch


def set_pkg_seed(seed: int, use_cuda: bool = True) -> None:
    """Seed python, numpy and torch (and CUDA when used)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if use_cuda and torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
