"""A replay buffer's sequences: which slot holds the next step of the same env's episode, kept as transitions are
written and overwritten, and walked on the buffer's device to gather a sequence."""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


class SequenceLinks:
    """Which slot holds the next step of the same env's episode (-1: none yet, or the episode ended), kept as
    transitions are written and overwritten; ``follow`` walks them on the buffer's device."""

    def __init__(self, size: int, device: torch.device) -> None:
        self._next, self._prev = np.full(size, -1, np.int64), np.full(size, -1, np.int64)
        self._env_of = np.full(size, -1, np.int64)
        self._last: dict[int, int] = {}  # env id -> the slot of its newest step
        self.next = torch.full((size,), -1, dtype=torch.long, device=device)

    def write(self, slots: Tensor, env_id: Tensor, episode_start: Tensor) -> None:
        """Link ``slots`` (in the order written) after each env's previous step, unless it starts an episode."""
        nxt, prev, touched = self._next, self._prev, []
        for slot, env, start in zip(slots.tolist(), env_id.reshape(-1).tolist(), episode_start.reshape(-1).tolist()):
            if prev[slot] >= 0:  # the overwritten step's neighbours lose it
                nxt[prev[slot]] = -1
                touched.append(prev[slot])
            if nxt[slot] >= 0:
                prev[nxt[slot]] = -1
            if self._last.get(self._env_of[slot]) == slot:
                del self._last[self._env_of[slot]]
            last = self._last.get(env, -1)
            prev[slot], nxt[slot] = (-1 if start else last), -1
            if not start and last >= 0:
                nxt[last] = slot
                touched.append(last)
            self._last[env], self._env_of[slot] = slot, env
            touched.append(slot)
        index = torch.as_tensor(touched, dtype=torch.long)
        self.next[index.to(self.next.device)] = torch.from_numpy(nxt[index.numpy()]).to(self.next.device)

    def follow(self, first: Tensor, steps: int) -> tuple[Tensor, Tensor]:
        """``(slots [B, steps], mask [B, steps])`` from ``first``: past an episode's end (or its newest step) the
        last slot repeats and the mask is False."""
        slots, mask = [first], [torch.ones_like(first, dtype=torch.bool)]
        for _ in range(steps - 1):
            nxt = self.next[slots[-1]]
            ok = mask[-1] & (nxt >= 0)
            slots.append(torch.where(ok, nxt, slots[-1]))
            mask.append(ok)
        return torch.stack(slots, 1), torch.stack(mask, 1)
