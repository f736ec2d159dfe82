"""An extra term of the SAC family's critic loss, with what it learns: none by default (SAC's loss as it is); CQL's
conservative term is one (``policy_zoo/cql.py``)."""
from __future__ import annotations

from typing import Any

from torch import Tensor, nn


class CriticTerm(nn.Module):
    """What a policy class's ``critic_term`` adds to the critics' loss, steps after their step, logs and checkpoints.

    Built by the policy from itself in ``_init_learn`` (an ``nn.Module``, so a seed axis stacks what it learns)."""

    def __init__(self, policy: Any = None) -> None:
        super().__init__()

    @staticmethod
    def check_config(cfg: Any) -> None:
        """Refuse, at compile time, the policy settings (``cfg``) the term cannot honour."""

    def target_bonus(self, alpha_log_pi: Tensor) -> Tensor:
        """What the TD target's soft value subtracts, from SAC's ``alpha log pi``."""
        return alpha_log_pi

    def add(self, loss: Tensor, batch: Any, q: Tensor) -> Tensor:
        """The critics' ``loss`` with the term added (``q``: every critic's Q of the batch's actions, ``[E, B]``)."""
        return loss

    def step(self) -> dict[str, Tensor]:
        """After the critics' step: a step of what else their loss gave gradients to; its statistics."""
        return {}

    def stat_names(self) -> list[str]:
        return []

    def learn_state(self) -> dict[str, Any]:
        return {}

    def load_learn_state(self, state: dict[str, Any]) -> None:
        """Restore ``learn_state``'s entries from a policy's learn state (absent ones stay as built)."""
