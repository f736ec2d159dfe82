"""DI-engine's helpers for users' own policies (``ding.policy.common_utils``), over ding_lite's preprocessing."""
from __future__ import annotations

from typing import Any

from ding_lite.data import Batch
from ding_lite.rl_utils import preprocess_learn_batch


def default_preprocess_learn(data: list[Any] | Batch, use_priority_IS_weight: bool = False,
                             use_priority: bool = False, use_nstep: bool = False,
                             ignore_done: bool = False) -> dict[str, Any]:
    """DI-engine's learn-batch preprocessing: collate a list of transitions into a dict of tensors.

    As DI-engine: ``done`` is float (zeros under ``ignore_done``); ``weight`` is the importance-sampling weight
    (``priority_IS``, or ``IS``) when ``use_priority`` and ``use_priority_IS_weight``, else the transitions' own
    ``weight`` or None; ``use_nstep`` turns a ``[B, n]`` reward into ``[n, B]``. ``[B, 1]`` rewards, dones and
    integer actions come out as ``[B]``.
    """
    if use_priority_IS_weight and not use_priority:
        raise ValueError("use_priority_IS_weight=True needs use_priority=True: importance-sampling weights "
                         "correct prioritized sampling")
    first = data[0] if isinstance(data, (list, tuple)) else data
    own_weight = 'weight' in first
    batch = preprocess_learn_batch(data, device=None, ignore_done=ignore_done,
                                   use_priority_IS_weight=use_priority_IS_weight, nstep_reward=use_nstep)
    out = dict(batch.items())
    if not use_priority_IS_weight and not own_weight:
        out['weight'] = None
    if use_nstep:
        reward = out['reward'] if out['reward'].dim() == 2 else out['reward'].unsqueeze(1)
        out['reward'] = reward.permute(1, 0).contiguous()  # [B, n] -> [n, B]
    return out


__all__ = ['default_preprocess_learn']
