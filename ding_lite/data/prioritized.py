"""Prioritized experience replay (arXiv:1511.05952) over the struct-of-arrays ring of ``ReplayBuffer``."""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..registry import BUFFER_REGISTRY
from .buffer import ReplayBuffer
from .segment_tree import MinSegmentTree, SumSegmentTree


@BUFFER_REGISTRY.register('priority')
@BUFFER_REGISTRY.register('advanced')
class PrioritizedReplayBuffer(ReplayBuffer):
    """Samples transition i with probability p_i^alpha / sum p^alpha; adds ``priority_IS`` (the importance-sampling
    weight, DI-engine's key) and ``replay_buffer_idx`` to each batch.

    New transitions get the largest priority seen so far; ``beta`` anneals linearly to 1 over ``anneal_step``
    sample calls. A transition's own ``weight`` field, if it has one, is returned untouched.
    """

    config = dict(
        type='priority',       # the registered buffer name ('advanced' is an alias)
        alpha=0.6,             # 0 = uniform sampling
        beta=0.4,              # initial importance-sampling exponent
        anneal_step=int(1e5),  # sample() calls for beta to reach 1; 0 keeps beta fixed
    )

    def __init__(self, cfg: dict | None = None, tb_logger: Any = None, exp_name: str = 'default_experiment') -> None:
        super().__init__(cfg, tb_logger, exp_name)
        self.alpha, self.beta = float(self._cfg.alpha), float(self._cfg.beta)
        self._beta_step = (1.0 - self.beta) / self._cfg.anneal_step if self._cfg.anneal_step > 0 else 0.0
        self._sum_tree = SumSegmentTree(self.size, self.device)
        self._min_tree = MinSegmentTree(self.size, self.device)
        self._max_priority = torch.ones((), dtype=torch.float64, device=self.device)
        self._priority = torch.ones(self.size, dtype=torch.float64, device=self.device)  # raw: saved as is

    def _on_write(self, index: Tensor, flat: dict[tuple[str, ...], Tensor]) -> None:
        self._set_priority(index, self._max_priority.expand(index.shape))

    def _set_priority(self, index: Tensor, priority: Tensor) -> None:
        self._priority.scatter_reduce_(0, index, priority, reduce='amax', include_self=False)  # the trees' rule
        self._sum_tree.update(index, priority ** self.alpha)
        self._min_tree.update(index, priority ** self.alpha)

    def _draw(self, batch_size: int) -> tuple[Tensor, dict[str, Tensor]]:
        """Stratified proportional sampling; ``priority_IS`` is normalised by the largest possible weight."""
        self._check_can_sample(batch_size)
        total = self._sum_tree.reduce()
        bounds = torch.arange(batch_size, device=self.device, dtype=torch.float64)
        mass = (bounds + torch.rand(batch_size, device=self.device, dtype=torch.float64)) * (total / batch_size)
        index = self._sum_tree.find_prefixsum_idx(mass).clamp_(max=self._count - 1)
        prob = self._sum_tree[index] / total
        min_prob = self._min_tree.reduce() / total
        weight = (prob / min_prob).pow(-self.beta).to(torch.get_default_dtype())
        self.beta = min(1.0, self.beta + self._beta_step)
        return index, {'priority_IS': weight, 'replay_buffer_idx': index}

    def update(self, info: dict[str, Tensor]) -> None:
        """Set the priorities of ``info['replay_buffer_idx']`` to ``info['priority']`` (e.g. |TD error|).

        Tensors already on the buffer's device stay there: no host copy, no sync.
        """
        index = torch.as_tensor(info['replay_buffer_idx'], device=self.device).long().view(-1)
        priority = torch.as_tensor(info['priority'], device=self.device, dtype=torch.float64).view(-1)
        if index.shape != priority.shape:
            raise ValueError(f"update got {index.numel()} indices but {priority.numel()} priorities")
        priority = priority.clamp(min=1e-6)
        self._max_priority = torch.maximum(self._max_priority, priority.max())  # stays a tensor: no sync
        self._set_priority(index, priority)

    def _extra_state(self, slots: Tensor) -> dict[str, Any]:
        return {'priority': self._priority[slots].cpu(), 'max_priority': self._max_priority.cpu(), 'beta': self.beta}

    def _load_extra_state(self, extra: dict[str, Any], slots: Tensor) -> None:
        if 'priority' not in extra:  # a plain buffer's transitions: each at the largest priority, as new ones are
            self.update({'replay_buffer_idx': slots, 'priority': self._max_priority.expand(slots.shape)})
            return
        self.update({'replay_buffer_idx': slots, 'priority': extra['priority']})
        self._max_priority = extra['max_priority'].to(self.device, torch.float64)
        self.beta = extra['beta']

    def clear(self) -> None:
        super().clear()
        self._sum_tree.clear()
        self._min_tree.clear()
        self._max_priority.fill_(1.0)
        self._priority.fill_(1.0)
