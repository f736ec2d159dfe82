"""Learn batches mixed from several buffers: SQIL's agent/demonstration halves, offline + online (RLPD)."""
from __future__ import annotations

from typing import Any, Callable

import torch

from .collate import Batch, make_batch

TRANSITION_FIELDS = ('obs', 'action', 'reward', 'next_obs', 'done')


def mixed_sampler(sources: list[tuple[Any, float]],
                  rewards: tuple[float, ...] | None = None) -> Callable[[int], Batch | None]:
    """``sample(n)`` drawing from each buffer its share of ``n`` (the first gets the rounding), concatenated in order.

    With ``rewards``, source i's rewards are replaced by ``rewards[i]`` (SQIL's 0 for agent data, 1 for
    demonstrations). Returns None while a source holds fewer transitions than its share. The buffers must live
    on one device, so a batch never joins tensors across devices.
    """
    devices = {str(buffer.device) for buffer, _ in sources if getattr(buffer, 'device', None) is not None}
    if len(devices) > 1:
        raise ValueError(f"mixed batches need every buffer on one device, got {sorted(devices)}; create the "
                         f"demonstration/offline buffer on the replay buffer's device")

    def sample(n: int) -> Batch | None:
        counts = [round(n * share) for _, share in sources[1:]]
        counts.insert(0, n - sum(counts))
        if any(buffer.count() < k for (buffer, _), k in zip(sources, counts)):
            return None
        parts = [buffer.sample(k) for (buffer, _), k in zip(sources, counts)]
        fields = {f: torch.cat([part[f] for part in parts]) for f in TRANSITION_FIELDS}
        if rewards is not None:
            fields['reward'] = torch.cat([torch.full_like(part.reward, r) for part, r in zip(parts, rewards)])
        return make_batch(fields)
    return sample
