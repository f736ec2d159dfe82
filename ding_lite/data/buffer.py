"""Uniform replay buffer: preallocated per-field tensors written as a ring, sampled by one gather per field."""
from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from easydict import EasyDict
from torch import Tensor

from ..registry import BUFFER_REGISTRY, import_names
from ..utils.checkpoint import load_file, save_file
from ..utils.default_config import ConfigError, ConfigWarning, class_default_config, with_defaults
from ..utils.device import resolve_device
from .collate import Batch, batch_len, default_collate, flatten_batch, unflatten_batch

BUFFER_FILE_VERSION = 2
BUFFER_KIND = 'ding_lite.replay_buffer'


@BUFFER_REGISTRY.register('naive')
class ReplayBuffer:
    """FIFO ring of transitions stored struct-of-arrays; field shapes and dtypes are fixed by the first push."""

    config = dict(
        type='naive',              # the registered buffer name
        replay_buffer_size=10000,  # transitions kept; the oldest are overwritten
        device=None,               # where the storage lives; None: the learner's (policy.device), 'cpu' standalone
        save_replay_buffer=True,   # resume checkpoints carry the buffer, in a file beside them (ML-Agents' default)
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    def __init__(self, cfg: dict | None = None, tb_logger: Any = None, exp_name: str = 'default_experiment') -> None:
        self._cfg = with_defaults(type(self), cfg)
        self.size = int(self._cfg.replay_buffer_size)
        if self.size <= 0:
            raise ValueError(f"replay_buffer_size must be positive, got {self.size}")
        self.device = torch.device(resolve_device(False, self._cfg.device))
        self._tb_logger, self._exp_name = tb_logger, exp_name
        self._storage: dict[tuple[str, ...], Tensor] = {}
        self._ptr = 0
        self._count = 0

    def push(self, data: list[dict] | dict | Batch, cur_collector_envstep: int = -1) -> None:
        """Append a list of transitions or a batch (leading dim = transitions); the env step is DI-engine's and
        unused."""
        if isinstance(data, (list, tuple)):
            if not data:
                return
            data = default_collate(list(data), as_batch=False)  # plain dicts: a Batch tree costs ~20 us to build
        flat = flatten_batch(data)
        n = batch_len(flat)
        if not self._storage:
            self._allocate(flat)
        self._check_schema(flat)
        if n > self.size:  # only the newest `size` survive a ring anyway
            flat, n = {k: v[-self.size:] for k, v in flat.items()}, self.size
        index = (self._ptr + torch.arange(n, device=self.device)) % self.size
        for path, value in flat.items():
            self._storage[path].index_copy_(0, index, value.to(self.device, self._storage[path].dtype))
        self._on_write(index)
        self._ptr = (self._ptr + n) % self.size
        self._count = min(self._count + n, self.size)

    def sample(self, batch_size: int, cur_learner_iter: int = -1) -> Batch:
        """``batch_size`` transitions drawn uniformly with replacement, as one collated batch (the learner
        iteration is DI-engine's and unused)."""
        return self._gather(*self._draw(batch_size))

    def _draw(self, batch_size: int) -> tuple[Tensor, dict[str, Tensor]]:
        """The slots a sample of ``batch_size`` reads, and the fields it adds (a prioritized buffer's weights)."""
        self._check_can_sample(batch_size)
        return torch.randint(self._count, (batch_size,), device=self.device), {}

    def _gather(self, index: Tensor, extra: dict[str, Tensor] | None = None) -> Batch:
        flat = {path: storage.index_select(0, index) for path, storage in self._storage.items()}
        flat.update({(k,): v for k, v in (extra or {}).items()})
        return unflatten_batch(flat)

    def _check_can_sample(self, batch_size: int) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if self._count == 0:
            raise ValueError("cannot sample from an empty replay buffer")

    def _on_write(self, index: Tensor) -> None:
        """Hook for subclasses that track per-slot state (priorities)."""

    def count(self) -> int:
        return self._count

    def __len__(self) -> int:
        return self._count

    def clear(self) -> None:
        self._ptr = self._count = 0

    def check_memory(self, example: dict) -> None:
        """``ConfigError`` when ``size`` transitions like ``example`` (one transition's fields) would not fit in the
        memory available on the buffer's device; one warning above half of it. Run before anything is collected."""
        if not self._storage:
            self._check_bytes(flatten_batch(default_collate([example], as_batch=False)))

    def _check_bytes(self, flat: dict[tuple[str, ...], Tensor]) -> None:
        per = sum(math.prod(v.shape[1:]) * v.element_size() for v in flat.values())
        need, free = per * self.size, available_memory(self.device)
        if free is None or need <= free // 2:
            return
        gib = lambda n: f"{n / 2 ** 30:.1f} GiB"  # noqa: E731
        what = (f"the replay buffer needs {gib(need)} for replay_buffer_size={self.size} transitions of {per} bytes "
                f"each, and {gib(free)} of memory is available on {self.device}")
        if need > free:
            raise ConfigError(f"{what}: set policy.other.replay_buffer.replay_buffer_size to at most "
                              f"{free // per} (half the memory: {free // 2 // per})")
        warnings.warn(f"{what}: more than half of it", ConfigWarning, stacklevel=3)

    def _allocate(self, flat: dict[tuple[str, ...], Tensor]) -> None:
        self._check_bytes(flat)
        self._storage = {path: torch.zeros((self.size,) + tuple(v.shape[1:]), dtype=v.dtype, device=self.device)
                         for path, v in flat.items()}

    def _check_schema(self, flat: dict[tuple[str, ...], Tensor]) -> None:
        if set(flat) != set(self._storage):
            names = lambda paths: sorted('.'.join(p) for p in paths)  # noqa: E731
            raise ValueError(f"pushed fields {names(flat)} differ from the buffer's fields {names(self._storage)}")
        for path, value in flat.items():
            expected = self._storage[path].shape[1:]
            if value.shape[1:] != expected:
                raise ValueError(f"field {'.'.join(path)!r} has per-transition shape {tuple(value.shape[1:])}, "
                                 f"but the buffer was created with {tuple(expected)} by its first push")

    def state_dict(self) -> dict[str, Any]:
        """The ring as it is (slots, write position, per-slot state) as CPU tensors: ``load_state_dict`` into a
        buffer of the same size restores it exactly, so a resumed run samples what an uninterrupted one would."""
        slots = torch.arange(self._count, device=self.device)
        return {'version': BUFFER_FILE_VERSION, 'kind': BUFFER_KIND, 'size': self.size, 'ptr': self._ptr,
                'count': self._count, 'data': {k: v[:self._count].cpu() for k, v in self._storage.items()},
                'extra': self._extra_state(slots)}

    def load_state_dict(self, state: dict[str, Any], source: str = 'replay buffer state') -> None:
        """Replace the contents with ``state_dict()``'s (or an older file's); a buffer of another size keeps the
        newest transitions in order."""
        if not isinstance(state, dict) or state.get('kind') != BUFFER_KIND:
            raise ValueError(f"{source} is not a ding_lite replay buffer file")
        if state.get('version') not in (1, BUFFER_FILE_VERSION):
            raise ValueError(f"{source} has buffer file version {state.get('version')}, expected "
                             f"{BUFFER_FILE_VERSION}")
        self.clear()
        self._storage = {}
        data = state['data']
        if not data or batch_len(data) == 0:
            return
        count = batch_len(data)
        ptr = state.get('ptr', count)  # version 1 files hold the transitions oldest first
        if state.get('size') == self.size:
            self._allocate(data)
            for path, value in data.items():
                self._storage[path][:count] = value.to(self.device)
            self._ptr, self._count = ptr, count
            self._load_extra_state(state.get('extra') or {}, torch.arange(count))
            return
        order = (torch.arange(count) + ptr - count) % count  # oldest first
        self.push(unflatten_batch({k: v.index_select(0, order) for k, v in data.items()}))
        extra = {k: v.index_select(0, order)[-self._count:] if isinstance(v, Tensor) and v.dim() else v
                 for k, v in (state.get('extra') or {}).items()}
        self._load_extra_state(extra, torch.arange(self._count))

    def save(self, path: str) -> None:
        """Write ``state_dict()`` to ``path`` atomically."""
        save_file(path, self.state_dict())

    def load(self, path: str) -> None:
        """Replace the contents with a file written by ``save``."""
        self.load_state_dict(load_file(path, 'replay buffer file'), path)

    def _extra_state(self, slots: Tensor) -> dict[str, Any]:
        """Per-slot state to save beside the transitions of ``slots`` (none here)."""
        return {}

    def _load_extra_state(self, extra: dict[str, Any], slots: Tensor) -> None:
        """Restore ``_extra_state``: its per-slot entries now belong to ``slots``."""


def available_memory(device: torch.device) -> int | None:
    """Bytes free for new tensors on ``device``: the GPU's free memory, or Linux's ``MemAvailable`` (None where
    unknown)."""
    if device.type == 'cuda':
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open('/proc/meminfo') as f:
            for line in f:
                if line.startswith('MemAvailable:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def create_buffer(cfg: dict, *args: Any, **kwargs: Any) -> ReplayBuffer:
    """Build the registered buffer ``cfg.type`` (default ``'naive'``) after its ``import_names`` (DI-engine's)."""
    import_names(cfg.get('import_names'))
    return BUFFER_REGISTRY.build(cfg.get('type') or 'naive', cfg, *args, **kwargs)

