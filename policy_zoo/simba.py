"""SimBa (Lee et al., ICLR 2025, arXiv:2410.09754) as a policy: SAC on the ``simba_qac`` network with the paper's
values. Any continuous policy of the family takes the network alone through ``policy.model.type='simba_qac'``."""
from __future__ import annotations

from typing import ClassVar

from ding_lite.registry import POLICY_REGISTRY
from .sac import SACPolicy


@POLICY_REGISTRY.register('simba')
class SimbaPolicy(SACPolicy):
    """SAC on SimBa's actor (1 block, width 128) and critics (2 blocks, width 512), observations normalised by running
    statistics inside the model; AdamW (weight decay 1e-2) at 1e-4, two updates per env step, temperature 0.01 at the
    start and a target entropy of ``-|A| / 2``, the paper's SAC values."""

    capabilities: ClassVar[frozenset[str]] = frozenset({'reward_signals', 'reward_vector', 'cloning'})
    config = dict(
        type='simba',                        # the registered policy name
        model=dict(
            type='simba_qac',                # SimBa's network
            init='orthogonal',               # the paper's code initialises every Linear orthogonally
        ),
        learn=dict(
            update_per_collect=2,            # learn steps per collect call of n_sample (1) transitions: UTD 2
            learning_rate_q=1e-4,            # the paper's learning rates
            learning_rate_policy=1e-4,
            learning_rate_alpha=1e-4,
            weight_decay_q=1e-2,             # AdamW's weight decay (the paper's 1e-2)
            weight_decay_policy=1e-2,
            decoupled_weight_decay=True,     # AdamW, as the paper
            alpha=1e-2,                      # the paper's initial temperature
        ),
    )

    @classmethod
    def default_model(cls) -> str:
        return 'simba_qac'

    def _default_target_entropy(self) -> float:
        """The paper's ``-|A| / 2`` where ``learn.target_entropy`` is None (SimbaV2's too)."""
        return SACPolicy._default_target_entropy(self) / 2


__all__ = ['SimbaPolicy']
