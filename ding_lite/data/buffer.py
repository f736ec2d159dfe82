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
from ..utils.device import available_memory, resolve_device, staged
from .collate import Batch, batch_len, default_collate, flatten_batch, unflatten_batch
from .sequence_links import SequenceLinks

BUFFER_FILE_VERSION = 2
BUFFER_KIND = 'ding_lite.replay_buffer'


@BUFFER_REGISTRY.register('naive')
class ReplayBuffer:
    """FIFO ring of transitions stored struct-of-arrays; field shapes and dtypes are fixed by the first push.

    With ``sequence_length > 1`` (or a ``burnin_step``) a sample is ``[B, burnin_step + sequence_length]`` steps of
    one env from uniformly drawn first steps, never crossing an episode's end (padded with zeros, ``mask`` False);
    pushes then carry ``env_id`` and ``episode_start`` per transition, and ``first_step_fields`` come at the first
    step only (``[B, ...]``).
    """

    config = dict(
        type='naive',              # the registered buffer name
        replay_buffer_size=10000,  # transitions kept; the oldest are overwritten
        device=None,               # where the storage lives; None: the learner's (policy.device), 'cpu' standalone
        save_replay_buffer=True,   # resume checkpoints carry the buffer, in a file beside them (ML-Agents' default)
        sequence_length=1,         # steps per sample; > 1: sequences (set from policy.collect.unroll_len)
        burnin_step=0,             # steps before each sequence that only advance a recurrent state (R2D2's)
        her=None,                  # hindsight replay for goal-conditioned Dict envs: dict(n_sampled_goal=4,
                                   # goal_selection_strategy='future'|'final'|'episode') builds a 'her' buffer
        push_chunk=None,           # host transitions moved to the storage this many at a time; samples draw from all
                                   # but the newest pushes still waiting (None: 8 where it is on a GPU, else 1)
        sample_ahead=None,         # batches drawn at once and handed out one per sample: a sample comes from the
                                   # buffer as it stood up to that many samples ago (None: 8 on a GPU, else 1)
    )
    first_step_fields = ('state', 'prev_action', 'prev_reward')  # what a sequence needs at its start only
    # what it needs from the collector: each transition's env_id and episode_start (a buffer that traces episodes)
    episode_fields = False
    # whether the run binds it to its env's goals (``bind_goals(achieved, desired, compute_reward)``) before it samples
    binds_goals = False

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
        self.sequence_steps = int(self._cfg.burnin_step) + int(self._cfg.sequence_length)
        if self._cfg.sequence_length < 1 or self._cfg.burnin_step < 0:
            raise ConfigError(f"sequence_length must be >= 1 and burnin_step >= 0, got {self._cfg.sequence_length} "
                              f"and {self._cfg.burnin_step}")
        self._links = SequenceLinks(self.size, self.device) if self.sequence_steps > 1 else None
        plain = self._links is None and type(self)._on_write is ReplayBuffer._on_write
        self._chunk = min(_amortised(self._cfg, 'push_chunk', self.device), self.size) if plain else 1
        self._ahead_n = _amortised(self._cfg, 'sample_ahead', self.device) \
            if plain and type(self)._draw is ReplayBuffer._draw else 1
        self._waiting: dict[tuple[str, ...], Tensor] = {}  # host rows not in the storage yet, the first _waiting_n
        self._waiting_n = 0
        self._ahead: list[dict[tuple[str, ...], Tensor]] = []  # batches drawn already, the next one last

    def push(self, data: list[dict] | dict | Batch, cur_collector_envstep: int = -1) -> None:
        """Append a list of transitions or a batch (leading dim = transitions); the env step is DI-engine's, unused."""
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
        if self._chunk > 1 and n < self._chunk and all(v.device.type == 'cpu' for v in flat.values()):
            self._wait(flat, n)
            return
        self.flush()
        self._write(flat, n)

    def _wait(self, flat: dict[tuple[str, ...], Tensor], n: int) -> None:
        """Host rows kept until ``push_chunk`` of them wait, then written with one move to the storage."""
        if self._waiting_n + n > self._chunk:
            self.flush()
        if not self._waiting:
            self._waiting = {path: torch.empty((self._chunk, *v.shape[1:]), dtype=v.dtype)
                             for path, v in self._storage.items()}
        for path, value in flat.items():
            self._waiting[path][self._waiting_n:self._waiting_n + n] = value
        self._waiting_n += n
        if self._waiting_n == self._chunk:
            self.flush()

    def flush(self) -> None:
        """Write the pushed rows still waiting (``push_chunk``) into the storage."""
        n, self._waiting_n = self._waiting_n, 0
        if n:
            self._write({path: value[:n] for path, value in self._waiting.items()}, n)

    def _write(self, flat: dict[tuple[str, ...], Tensor], n: int) -> None:
        values = staged(flat, {p: v.dtype for p, v in self._storage.items()}, self.device)
        end = self._ptr + n
        if self._writes_slices(end):
            self._write_slices(values, end)  # the usual push: a slice of each field, no slot index built
        else:
            index = (self._ptr + torch.arange(n, device=self.device)) % self.size
            for path, value in values.items():
                self._storage[path].index_copy_(0, index, value)
            if self._links is not None:
                self._links.write(index, flat[('env_id',)], flat[('episode_start',)])
            self._on_write(index, flat)
        self._ptr = end % self.size
        self._count = min(self._count + n, self.size)

    def _writes_slices(self, end: int) -> bool:
        """Whether a push up to slot ``end`` is a slice of each field: no wrap, sequence links or per-slot state."""
        return end <= self.size and self._links is None and type(self)._on_write is ReplayBuffer._on_write

    def _write_slices(self, values: dict[tuple[str, ...], Tensor], end: int) -> None:
        """``values`` into slots ``[ptr, end)`` of their fields: on a GPU one copy kernel per dtype."""
        if self.device.type == 'cpu':
            for path, value in values.items():
                self._storage[path][self._ptr:end].copy_(value)
            return
        groups: dict[torch.dtype, tuple[list[Tensor], list[Tensor]]] = {}
        for path, value in values.items():
            slots, given = groups.setdefault(value.dtype, ([], []))
            slots.append(self._storage[path][self._ptr:end])
            given.append(value)
        for slots, given in groups.values():
            torch._foreach_copy_(slots, given)

    def sample(self, batch_size: int, cur_learner_iter: int = -1) -> Batch:
        """``batch_size`` transitions drawn uniformly with replacement, as one collated batch (the learner
        iteration is DI-engine's and unused). With ``sample_ahead`` k, k batches are drawn and gathered at once and
        handed out in turn."""
        if self._ahead_n == 1:
            return self._gather(*self._draw(batch_size))
        if not self._ahead or len(next(iter(self._ahead[-1].values()))) != batch_size:
            block = flatten_batch(self._gather(*self._draw(batch_size * self._ahead_n)))
            rows = {path: value.unflatten(0, (self._ahead_n, batch_size)).unbind(0) for path, value in block.items()}
            self._ahead = [{path: value[k] for path, value in rows.items()} for k in reversed(range(self._ahead_n))]
        return unflatten_batch(self._ahead.pop())

    def draw(self, batch_size: int) -> tuple[Tensor, dict[str, Tensor]]:
        """``_draw``: the slots a sample reads, by this buffer's rule, and the fields it adds."""
        return self._draw(batch_size)

    def _draw(self, batch_size: int) -> tuple[Tensor, dict[str, Tensor]]:
        """The slots a sample of ``batch_size`` reads, and the fields it adds (a prioritized buffer's weights)."""
        self._check_can_sample(batch_size)
        return torch.randint(self._count, (batch_size,), device=self.device), {}

    def _gather(self, index: Tensor, extra: dict[str, Tensor] | None = None) -> Batch:
        if self._links is not None:
            return self._gather_sequences(index, extra)
        flat = {path: storage.index_select(0, index) for path, storage in self._storage.items()}
        flat.update({(k,): v for k, v in (extra or {}).items()})
        return unflatten_batch(flat)

    def _gather_sequences(self, first: Tensor, extra: dict[str, Tensor] | None) -> Batch:
        """``sequence_steps`` steps from each of ``first``'s slots: ``[B, T, ...]`` per field (zeros past an
        episode's end), ``mask`` ``[B, T]`` (True on the episode's steps), ``first_step_fields`` ``[B, ...]``."""
        slots, mask = self._links.follow(first, self.sequence_steps)
        flat = {}
        for path, storage in self._storage.items():
            if path[0] in self.first_step_fields:
                flat[path] = storage.index_select(0, first)
                continue
            value = storage.index_select(0, slots.reshape(-1)).reshape(*slots.shape, *storage.shape[1:])
            flat[path] = value.masked_fill(~mask.reshape(*mask.shape, *[1] * (value.dim() - 2)), 0)
        flat[('mask',)] = mask
        flat.update({(k,): v for k, v in (extra or {}).items()})
        return unflatten_batch(flat)

    def _check_can_sample(self, batch_size: int) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if self._count == 0:
            self.flush()
        if self._count == 0:
            raise ValueError("cannot sample from an empty replay buffer")

    def _on_write(self, index: Tensor, flat: dict[tuple[str, ...], Tensor]) -> None:
        """Hook for subclasses that track per-slot state (priorities, episodes): ``index`` the slots written, in
        order, ``flat`` the pushed fields as given (before their move to the buffer's device)."""

    @property
    def storage(self) -> dict[tuple[str, ...], Tensor]:
        """Each field's storage ``[size, ...]`` by path (empty before the first push; ``share_storage`` changes it)."""
        return dict(self._storage)

    @property
    def cursor(self) -> tuple[int, int]:
        """``(the next slot written, the transitions kept)``."""
        return self._ptr, self._count

    def write_through(self) -> None:
        """Write every push into the storage at once from now on (no rows kept waiting: ``push_chunk`` 1)."""
        self.flush()
        self._chunk = 1

    def share_storage(self, tensors: dict[tuple[str, ...], Tensor]) -> None:
        """Keep the fields ``tensors`` names in them (views into a larger tensor, of each field's shape and dtype)."""
        for path, tensor in tensors.items():
            own = self._storage[path]
            if tensor.shape != own.shape or tensor.dtype != own.dtype:
                raise ValueError(f"share_storage: field {'.'.join(path)!r} is {tuple(own.shape)} {own.dtype}, got "
                                 f"{tuple(tensor.shape)} {tensor.dtype}")
            self._storage[path] = tensor

    def writes_slice(self, n: int) -> bool:
        """Whether the next ``n`` rows go to one slice of each field (no wrap, no per-slot state to keep)."""
        return self._writes_slices(self._ptr + n)

    def check_schema(self, flat: dict[tuple[str, ...], Tensor]) -> None:
        """``ValueError`` where the flat fields ``flat`` (transitions) are not the buffer's fields and shapes."""
        self._check_schema(flat)

    def advance(self, n: int) -> None:
        """Count ``n`` rows written into ``writes_slice``'s slice from outside (into ``storage``)."""
        self._ptr = (self._ptr + n) % self.size
        self._count = min(self._count + n, self.size)

    def count(self) -> int:
        """Transitions pushed and kept (those still waiting to be written included)."""
        return min(self._count + self._waiting_n, self.size)

    def fields(self) -> dict[tuple[str, ...], Tensor]:
        """Every stored transition's fields (paths as ``state_dict``'s), oldest first."""
        self.flush()
        order = (self._ptr - self._count + torch.arange(self._count, device=self.device)) % self.size
        return {path: storage.index_select(0, order) for path, storage in self._storage.items()}

    def transform(self, path: tuple[str, ...], fn: Any) -> None:
        """Replace the field ``path`` of every stored transition by ``fn`` of it (loaded data's reward clip)."""
        self.flush()
        self._storage[path][:self._count] = fn(self._storage[path][:self._count])
        self._ahead = []

    def __len__(self) -> int:
        return self.count()

    def clear(self) -> None:
        self._ptr = self._count = self._waiting_n = 0
        self._ahead = []
        if self._links is not None:
            self._links = SequenceLinks(self.size, self.device)

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
        if self._links is not None and not {('env_id',), ('episode_start',)} <= set(flat):
            raise ValueError(f"a buffer of sequences (sequence_length={self._cfg.sequence_length}, burnin_step="
                             f"{self._cfg.burnin_step}) needs env_id and episode_start in every transition (a "
                             f"recurrent policy's collector adds them); got fields {sorted('.'.join(p) for p in flat)}")
        if set(flat) != set(self._storage):
            names = lambda paths: sorted('.'.join(p) for p in paths)  # noqa: E731
            raise ValueError(f"pushed fields {names(flat)} differ from the buffer's fields {names(self._storage)}")
        for path, value in flat.items():
            expected = self._storage[path].shape[1:]
            if value.shape[1:] != expected:
                raise ValueError(f"field {'.'.join(path)!r} has per-transition shape {tuple(value.shape[1:])}, "
                                 f"but the buffer was created with {tuple(expected)} by its first push")

    def state_dict(self) -> dict[str, Any]:
        """The ring as it is (slots, write position, per-slot state, rows still waiting, batches drawn ahead) as CPU
        tensors: ``load_state_dict`` into a buffer of the same size restores it exactly, so a resumed run samples
        what an uninterrupted one would."""
        slots = torch.arange(self._count, device=self.device)
        state = {'version': BUFFER_FILE_VERSION, 'kind': BUFFER_KIND, 'size': self.size, 'ptr': self._ptr,
                 'count': self._count, 'data': {k: v[:self._count].cpu() for k, v in self._storage.items()},
                 'extra': self._extra_state(slots)}
        if self._waiting_n:
            state['waiting'] = {k: v[:self._waiting_n].clone() for k, v in self._waiting.items()}
        if self._ahead:
            state['ahead'] = [{k: v.cpu() for k, v in batch.items()} for batch in self._ahead]
        return state

    def load_state_dict(self, state: dict[str, Any], source: str = 'replay buffer state') -> None:
        """Replace the contents with ``state_dict()``'s (or an older file's); a buffer of another size keeps the
        newest transitions in order."""
        if not isinstance(state, dict) or state.get('kind') != BUFFER_KIND:
            raise ValueError(f"{source} is not a ding_lite replay buffer file")
        if state.get('version') not in (1, BUFFER_FILE_VERSION):
            raise ValueError(f"{source} has buffer file version {state.get('version')}, expected "
                             f"{BUFFER_FILE_VERSION}")
        self.clear()
        self._storage, self._waiting = {}, {}
        self._load_rows(state)
        if state.get('waiting'):
            self.push(unflatten_batch(state['waiting']))
        if state.get('ahead') and self._ahead_n > 1:
            self._ahead = [{k: v.to(self.device) for k, v in batch.items()} for batch in state['ahead']]

    def _load_rows(self, state: dict[str, Any]) -> None:
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
            self._relink()
            self._load_extra_state(state.get('extra') or {}, torch.arange(count))
            return
        order = (torch.arange(count) + ptr - count) % count  # oldest first
        self.push(unflatten_batch({k: v.index_select(0, order) for k, v in data.items()}))
        self.flush()
        extra = {k: v.index_select(0, order)[-self._count:] if isinstance(v, Tensor) and v.dim() else v
                 for k, v in (state.get('extra') or {}).items()}
        self._load_extra_state(extra, torch.arange(self._count))

    def _relink(self) -> None:
        """The sequence links of restored slots, rebuilt oldest first: as the pushes had built them."""
        if self._links is None:
            return
        if ('env_id',) not in self._storage or ('episode_start',) not in self._storage:
            raise ValueError("this buffer samples sequences, but the loaded transitions have no env_id and "
                             "episode_start (a buffer written by a run without a recurrent model)")
        order = (self._ptr - self._count + torch.arange(self._count, device=self.device)) % self.size
        self._links.write(order, self._storage[('env_id',)][order], self._storage[('episode_start',)][order])

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


def _amortised(cfg: EasyDict, key: str, device: torch.device) -> int:
    """``cfg[key]`` checked (a positive int), or its default: 8 where the storage is on a GPU (a move to it and a
    gather cost a launch each, whatever their size), else 1."""
    value = cfg.get(key)
    if value is None:
        return 1 if device.type == 'cpu' else 8
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"policy.other.replay_buffer.{key} must be a positive int (or None for the default), got "
                          f"{value!r}")
    return value


def create_buffer(cfg: dict, *args: Any, **kwargs: Any) -> ReplayBuffer:
    """Build the registered buffer ``cfg.type`` (default ``'naive'``) after its ``import_names`` (DI-engine's)."""
    import_names(cfg.get('import_names'))
    return BUFFER_REGISTRY.build(cfg.get('type') or 'naive', cfg, *args, **kwargs)

