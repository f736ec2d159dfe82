"""SQIL on SAC (arXiv:1905.11108): SAC plus per-half diagnostics of SQIL's mixed batches."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ding_lite.data import Batch
from ding_lite.registry import POLICY_REGISTRY
from .sac import SACPolicy


@POLICY_REGISTRY.register('sqil_sac')
class SQILSACPolicy(SACPolicy):
    """SAC on batches whose first half is agent data and second half demonstrations (built by the pipeline)."""
    capabilities = frozenset({'cloning'})  # its update is not written for sequences or reward heads

    config = dict(
        type='sqil_sac',                     # the registered policy name
        learn=dict(
            monitor_cos=False,               # log the agent/demo gradient cosine (two extra backward passes)
        ),
    )

    def _forward_learn(self, data: list[dict] | Batch) -> dict[str, Tensor]:
        batch = self._preprocess_learn(data)
        extra = {'grad_cos': self._grad_cos(batch)} if self._cfg.learn.monitor_cos else {}
        return self._update(batch) | extra

    def _update(self, batch: Batch) -> dict[str, Tensor]:
        stats = super()._update(batch)
        agent_td, expert_td = stats['priority'].chunk(2, dim=-1)  # [B] ([S, B] with a seed axis)
        return stats | {'agent_td_error': agent_td.mean(-1), 'expert_td_error': expert_td.mean(-1)}

    def _grad_cos(self, batch: Batch) -> Tensor:
        """Cosine between the critic gradients of the agent half and the demonstration half (DI-engine's monitor)."""
        td = self._critic_td(batch)[0]
        params = [p for p in self._model.critic.parameters() if p.requires_grad]
        grads = [torch.cat([g.flatten() for g in torch.autograd.grad(half.pow(2).mean(-1).sum(), params,
                                                                     retain_graph=True)])
                 for half in td.chunk(2, dim=-1)]
        return F.cosine_similarity(grads[0], grads[1], dim=0).detach()

    def _monitor_vars_learn(self) -> list[str]:
        names = ['agent_td_error', 'expert_td_error'] + (['grad_cos'] if self._cfg.learn.monitor_cos else [])
        return super()._monitor_vars_learn() + names
