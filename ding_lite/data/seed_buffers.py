"""The replay buffers of a run of many seeds as one tensor per field, sampled in one gather."""
from __future__ import annotations

import torch
from torch import Tensor

from ..utils.device import staged
from .buffer import ReplayBuffer


class SeedBuffers:
    """Buffers of one class and size, one per seed, whose storage becomes rows of ``[S, size, ...]`` tensors (each
    buffer's own tensors are views of its row: it pushes, saves and loads as before). ``sample`` draws each seed's
    slots as its buffer would (its own count, its priorities) and reads all of them with one gather per field."""

    def __init__(self, buffers: list[ReplayBuffer]) -> None:
        self.buffers = list(buffers)
        for buffer in self.buffers:  # pushed together from here on: no rows left waiting, none kept back
            buffer.write_through()
        first = self.buffers[0]
        if len({(type(b), b.size, b.device) for b in self.buffers}) > 1:
            raise ValueError("the seeds' buffers differ in class, size or device; they cannot share one tensor")
        schema = {path: (v.shape, v.dtype) for path, v in first.storage.items()}
        if not schema or any(len(path) > 1 for path in schema) or any(
                {path: (v.shape, v.dtype) for path, v in b.storage.items()} != schema for b in self.buffers):
            raise ValueError("the seeds' buffers must hold the same flat fields to share one tensor")
        self._stacked: dict[str, Tensor] = {}
        for path in schema:
            stacked = torch.stack([b.storage[path] for b in self.buffers])
            for k, buffer in enumerate(self.buffers):
                buffer.share_storage({path: stacked[k]})
            self._stacked[path[0]] = stacked.flatten(0, 1)  # [S * size, ...]: seed k's slot i at k * size + i
        self._views = [b.storage for b in self.buffers]
        self._offset_cache: dict[tuple[int, ...], Tensor] = {}
        # every buffer draws uniformly, as ReplayBuffer does (one class for all: checked above)
        self._uniform = type(first).draw is ReplayBuffer.draw and type(first)._draw is ReplayBuffer._draw

    def intact(self) -> bool:
        """Whether every buffer still holds its views (a buffer that reallocated, by loading a file of another
        schema, has left the shared tensors)."""
        return all(b.storage.keys() == views.keys() and all(b.storage[p] is v for p, v in views.items())
                   for b, views in zip(self.buffers, self._views))

    def sample(self, seeds: list[int], batch_size: int) -> dict[str, Tensor]:
        """``batch_size`` transitions of each of ``seeds`` (positions in ``buffers``): ``{field: [len(seeds),
        batch_size, ...]}``, each seed's drawn by its own buffer's rule."""
        size, draws = self.buffers[0].size, None
        counts = {self.buffers[k].cursor[1] for k in seeds}
        if len(counts) == 1 and self._uniform:
            # uniform draws from one count: one randint for every seed (on the CPU the very draws made seed by seed)
            self.buffers[seeds[0]]._check_can_sample(batch_size)
            slots = torch.randint(counts.pop(), (len(seeds), batch_size), device=self.buffers[0].device)
            index = (slots + self._offsets(seeds)).flatten()
        else:
            draws = [self.buffers[k].draw(batch_size) for k in seeds]
            index = torch.stack([slots + k * size for k, (slots, _) in zip(seeds, draws)]).flatten()
        fields = {key: storage.index_select(0, index).unflatten(0, (len(seeds), batch_size))
                  for key, storage in self._stacked.items()}
        for key in draws[0][1] if draws else ():
            fields[key] = torch.stack([extra[key] for _, extra in draws])
        return fields

    def _offsets(self, seeds: list[int]) -> Tensor:
        """``[S, 1]``: where each of ``seeds``' rows starts in the flat storage (made once per seed list)."""
        key = tuple(seeds)
        if key not in self._offset_cache:
            self._offset_cache[key] = torch.tensor(seeds, device=self.buffers[0].device)[:, None] * self.buffers[0].size
        return self._offset_cache[key]

    def push_all(self, batches: list[dict[str, Tensor]]) -> bool:
        """Batch k into buffer k, every field of every seed with one copy (and one host-to-device copy per dtype),
        where the buffers stand alike (plain buffers at the same write position and count, no wrap this push, the
        batches of the buffers' fields and one length); False, writing nothing, where they do not: push each then.
        Batches that are rows of one tensor per field (``SeedBatches``: a round of collectors stepped together)
        are copied from those tensors."""
        first, seeds = self.buffers[0], len(self.buffers)
        # (the seeds' batches as rows of one tensor per field already)
        stacked = getattr(batches, 'stacked', None) if len(batches) == seeds else None
        n = len(batches[0]['reward']) if 'reward' in batches[0] else 0
        alike = 0 < n and first.writes_slice(n) and self.intact() and len({b.cursor for b in self.buffers}) == 1 and (
            set(stacked) == set(self._stacked) and all(len(v) == n * seeds for v in stacked.values())
            if stacked is not None else
            all(set(batch) == set(self._stacked) and all(len(v) == n for v in batch.values()) for batch in batches))
        if not alike:
            return False
        rows = {(key,): stacked[key] if stacked is not None else
                torch.stack([torch.as_tensor(batch[key]) for batch in batches]).flatten(0, 1) for key in self._stacked}
        first.check_schema({path: value[:n] for path, value in rows.items()})  # (one schema: the rows stacked)
        values = staged(rows, {(key,): v.dtype for key, v in self._stacked.items()}, first.device)
        start = first.cursor[0]
        for (key,), value in values.items():
            storage = self._stacked[key].unflatten(0, (seeds, first.size))
            storage[:, start:start + n].copy_(value.unflatten(0, (seeds, n)))
        for buffer in self.buffers:
            buffer.advance(n)
        return True
