"""Array-backed segment trees over torch tensors, updated and queried for a whole batch of indices at once."""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor


class SegmentTree:
    """Binary tree in one tensor: leaves at ``[capacity, 2 * capacity)``, node i combines 2i and 2i + 1."""

    def __init__(self, size: int, op: Callable[[Tensor, Tensor], Tensor], neutral: float,
                 device: torch.device | str = 'cpu') -> None:
        self.capacity = 1 << max(1, math.ceil(math.log2(max(size, 1))))
        self.depth = int(math.log2(self.capacity))
        self._op, self._neutral = op, neutral
        self.tree = torch.full((2 * self.capacity,), neutral, dtype=torch.float64, device=device)

    def update(self, index: Tensor, value: Tensor) -> None:
        """Set leaves ``index`` to ``value`` and recompute their ancestors, all on the tree's device (no sync).

        A leaf named twice takes the larger of its values (the same rule in every tree); an ancestor named
        twice is computed twice from the same children, so duplicate writes carry identical values.
        """
        node = index.long() + self.capacity
        self.tree.scatter_reduce_(0, node, value.to(self.tree), reduce='amax', include_self=False)
        for _ in range(self.depth):
            node = node // 2
            self.tree[node] = self._op(self.tree[2 * node], self.tree[2 * node + 1])

    def reduce(self) -> Tensor:
        return self.tree[1]

    def __getitem__(self, index: Tensor) -> Tensor:
        return self.tree[index.long() + self.capacity]

    def clear(self) -> None:
        self.tree.fill_(self._neutral)


class SumSegmentTree(SegmentTree):

    def __init__(self, size: int, device: torch.device | str = 'cpu') -> None:
        super().__init__(size, torch.add, 0.0, device)

    def find_prefixsum_idx(self, mass: Tensor) -> Tensor:
        """For each ``mass``, the leaf i with prefix sum up to i-1 <= mass < prefix sum up to i."""
        mass = mass.to(self.tree).clone()
        node = torch.ones_like(mass, dtype=torch.long)
        for _ in range(self.depth):
            left = self.tree[2 * node]
            go_right = mass >= left
            mass = torch.where(go_right, mass - left, mass)
            node = 2 * node + go_right.long()
        return node - self.capacity


class MinSegmentTree(SegmentTree):

    def __init__(self, size: int, device: torch.device | str = 'cpu') -> None:
        super().__init__(size, torch.minimum, math.inf, device)
