"""Collate lists of samples into batches (treetensor trees) and split batches back into samples."""
from __future__ import annotations

import numbers
import warnings
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

with warnings.catch_warnings():  # treevalue registers itself with a deprecated torch pytree call
    warnings.simplefilter('ignore', FutureWarning)
    import treetensor.torch as ttorch

Batch = ttorch.Tensor


def make_batch(tree: dict | tuple) -> Batch:
    """A ``Batch`` from a nested dict (or namedtuple: its fields become keys) of tensors, built node by node:
    ``Batch(dict)`` formats every tensor, which costs milliseconds."""
    batch = Batch({})
    for key, value in (tree._asdict() if _is_namedtuple(tree) else tree).items():
        setattr(batch, key, make_batch(value) if isinstance(value, dict) or _is_namedtuple(value) else value)
    return batch


class Rows(Mapping):
    """The rows ``index`` (an int or a slice) of each field of ``stacked``, cut as each field is looked up: one
    member's part of many members' stacked fields (a seed's outputs of a stacked update, its batch of a round)."""

    def __init__(self, stacked: Mapping[str, Any], index: int | slice) -> None:
        self._stacked, self._index = stacked, index

    def __getitem__(self, key: str) -> Any:
        return self._stacked[key][self._index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stacked)

    def __len__(self) -> int:
        return len(self._stacked)


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, '_fields')


def to_tensor(value: Any, path: str = 'data') -> Tensor:
    """One sample's leaf as a tensor; float64 becomes the default float dtype (float32)."""
    if isinstance(value, Tensor):
        tensor = value
    elif isinstance(value, (np.ndarray, np.generic, numbers.Number)):
        tensor = torch.as_tensor(value)
    else:
        raise TypeError(f"cannot collate {path}: expected a tensor, numpy array or number, got {type(value).__name__}")
    return tensor.to(torch.get_default_dtype()) if tensor.dtype == torch.float64 else tensor


def to_ndarray(value: Any) -> Any:
    """A tensor as a numpy array (a view for a CPU tensor); anything else as it is."""
    return value.numpy(force=True) if isinstance(value, Tensor) else value


def to_float32(array: np.ndarray) -> np.ndarray:
    """float64 observations as float32, as ``default_collate`` makes them; other arrays as they are."""
    return array.astype(np.float32) if array.dtype.char == 'd' else array  # 'd': float64 (a cheap test)


def true_rows(flags: np.ndarray) -> list[int]:
    """The indices where a bool column is True (none, the common case, found with no ufunc reduction: in a step of
    envs the reductions' code is cold, several us a call)."""
    return np.flatnonzero(flags).tolist() if np.count_nonzero(flags) else []


def to_scalar(value: Any, what: str) -> float | int | bool:
    """A one-element value (Python number, 0-d or shape-(1,) array or tensor) as a Python number.

    Envs report reward, done and episode returns either way (gymnasium: scalars; DI-engine: shape (1,)).
    """
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, np.generic):  # what gymnasium envs hand out
        return value.item()
    if isinstance(value, (Tensor, np.ndarray)) and (value.numel() if isinstance(value, Tensor)
                                                                 else value.size) == 1:
        return value.item()
    if isinstance(value, numbers.Number):
        return value
    shape = tuple(getattr(value, 'shape', ())) or type(value).__name__
    raise ValueError(f"{what} must be a number or a one-element array, got {shape}")


def to_reward(value: Any, dim: int | None, what: str) -> float | np.ndarray:
    """An env's reward: a number (``dim`` None), or ``dim`` numbers as a float32 array (a multi-dimensional reward,
    ``policy.reward_weights``); a ``ValueError`` naming what came and what was expected."""
    if dim is None:
        try:
            return float(to_scalar(value, what))
        except ValueError as error:
            raise ValueError(f"{error} (a reward vector needs policy.reward_weights, one weight per dimension)") \
                from None
    array = np.asarray(value, dtype=np.float32)
    if array.size != dim or array.ndim > 1:
        raise ValueError(f"{what} must hold {dim} numbers (policy.reward_weights has {dim}), got shape "
                         f"{tuple(array.shape)}")
    return array.reshape(dim)


class Transition(dict):
    """A transition dict cut from row ``row`` of a collected batch's columns (``collect()``'s list API). Its
    array and tensor fields are views of those columns; any change of its keys or values (and a copy or a pickle,
    which come back as plain dicts) forgets them. ``default_collate`` of every row of one batch, in order and
    untouched, returns the columns as they stand (in-place edits of the views included) instead of stacking the
    rows again."""

    __slots__ = ('_source', '_row')

    def __setitem__(self, key: Any, value: Any) -> None:
        self._source = None
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self._source = None
        super().__delitem__(key)

    def __ior__(self, other: Any) -> Transition:
        self._source = None
        return super().__ior__(other)

    def __reduce__(self) -> tuple:
        return dict, (dict(self),)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._source = None
        super().update(*args, **kwargs)

    def pop(self, *args: Any) -> Any:
        self._source = None
        return super().pop(*args)

    def popitem(self) -> tuple:
        self._source = None
        return super().popitem()

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._source = None
        return super().setdefault(key, default)

    def clear(self) -> None:
        self._source = None
        super().clear()


class RowSource:
    """The columns a list of ``Transition`` rows was cut from, as ``default_collate`` of those rows returns them."""

    __slots__ = ('columns', 'rows')

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns, self.rows = columns, len(next(iter(columns.values()))) if columns else 0

    def collated(self) -> dict[str, Tensor]:
        out = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in self.columns.items()}
        return {k: v.to(torch.get_default_dtype()) if v.dtype == torch.float64 else v for k, v in out.items()}


def transitions(columns: dict[str, np.ndarray], fields: dict[str, Sequence[Any]]) -> list[Transition]:
    """``Transition``s whose field ``k`` in row ``i`` is ``fields[k][i]`` (row ``i`` of ``columns[k]``)."""
    source, out = RowSource(columns), []
    for i, row in enumerate(zip(*fields.values())):
        item = Transition(zip(fields, row))
        item._source, item._row = source, i
        out.append(item)
    return out


def _untouched_rows(batch: Sequence[Any]) -> RowSource | None:
    """The source of ``batch`` where it is every row of one collected batch, in order, none of them changed."""
    first = batch[0]
    source = first._source if type(first) is Transition else None
    if source is None or len(batch) != source.rows:
        return None
    for i, item in enumerate(batch):
        if type(item) is not Transition or item._source is not source or item._row != i:
            return None
    return source


def default_collate(batch: Sequence[Any], path: str = 'data', as_batch: bool = True) -> Any:
    """Stack a list of samples (nested dicts / tuples of arrays, numbers or tensors) along a new first dim.

    Dicts become ``Batch`` trees when every leaf is a tensor (``as_batch=False``: plain dicts, which cost nothing
    to build). Ragged shapes or differing keys raise ``ValueError``. Every row of one collected batch
    (``Transition``s, untouched and in order) gives that batch's columns.
    """
    if len(batch) == 0:
        raise ValueError(f"cannot collate {path}: empty list")
    first = batch[0]
    if isinstance(first, Batch):
        return ttorch.stack(list(batch))
    if isinstance(first, dict):
        source = _untouched_rows(batch)
        if source is not None:
            out = source.collated()
            return make_batch(out) if as_batch else out
        keys = first.keys()
        for i, item in enumerate(batch):
            if not isinstance(item, dict) or item.keys() != keys:
                raise ValueError(f"cannot collate {path}: sample {i} has keys "
                                 f"{sorted(item) if isinstance(item, dict) else type(item).__name__}, sample 0 has "
                                 f"{sorted(keys)}")
        out = {k: default_collate([item[k] for item in batch], f"{path}.{k}", as_batch) for k in first}
        return make_batch(out) if as_batch and _all_tensors(out) else out
    if isinstance(first, (tuple, list)) and not isinstance(first, str):
        if any(len(item) != len(first) for item in batch):
            raise ValueError(f"cannot collate {path}: sequences of different lengths")
        return _same_sequence(first, [default_collate([item[i] for item in batch], f"{path}[{i}]", as_batch)
                                      for i in range(len(first))])
    if first is None or isinstance(first, str):
        return list(batch)
    fast = _stack_same_type(batch, path)
    if fast is not None:
        return fast
    tensors = [to_tensor(item, path) for item in batch]
    shape = tensors[0].shape
    for i, tensor in enumerate(tensors):
        if tensor.shape != shape:
            raise ValueError(f"cannot collate {path}: ragged input, sample {i} has shape {tuple(tensor.shape)} "
                             f"but sample 0 has {tuple(shape)}")
    return torch.stack(tensors)


def _stack_same_type(batch: Sequence[Any], path: str) -> Tensor | None:
    """One stack for a list of same-typed leaves (the common case); None to take the general path."""
    kinds = set(map(type, batch))
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    try:
        if issubclass(kind, Tensor):
            out = torch.stack(list(batch))
        elif issubclass(kind, (np.ndarray, np.generic)):  # np.array: np.stack's checks cost 3x; ragged raises
            out = torch.from_numpy(np.array(batch))
        elif kind in (bool, int, float):
            out = torch.tensor(batch)
        else:
            return None
    except (RuntimeError, ValueError):  # ragged: the general path names the offending sample
        return None
    return out.to(torch.get_default_dtype()) if out.dtype == torch.float64 else out


def _same_sequence(like: tuple | list, items: list) -> tuple | list:
    """``items`` as a sequence of ``like``'s type; a namedtuple takes its fields positionally."""
    return type(like)(*items) if _is_namedtuple(like) else type(like)(items)


def _all_tensors(tree: Any) -> bool:
    if isinstance(tree, dict):
        return all(_all_tensors(v) for v in tree.values())
    return isinstance(tree, (Tensor, Batch))


def default_decollate(batch: Any) -> list[Any]:
    """Split a batch along its first dim into a list of samples (inverse of ``default_collate``)."""
    if isinstance(batch, Tensor):
        return list(batch.unbind(0))
    if isinstance(batch, (dict, Batch)):
        items = {k: default_decollate(v) for k, v in batch.items()}
        sizes = {len(v) for v in items.values()}
        if len(sizes) > 1:
            raise ValueError(f"cannot decollate: fields have different batch sizes {sorted(sizes)}")
        n = sizes.pop() if sizes else 0
        return [{k: v[i] for k, v in items.items()} for i in range(n)]
    if isinstance(batch, (tuple, list)):
        parts = [default_decollate(v) for v in batch]
        return [_same_sequence(batch, [part[i] for part in parts]) for i in range(len(parts[0]))] if parts else []
    raise TypeError(f"cannot decollate {type(batch).__name__}")


def flatten_batch(batch: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Tensor]:
    """``{path: tensor}`` for every leaf of a nested dict/``Batch`` of tensors."""
    out: dict[tuple[str, ...], Tensor] = {}
    for key, value in batch.items():
        if isinstance(value, (dict, Batch)):
            out.update(flatten_batch(value, prefix + (key,)))
        elif isinstance(value, Tensor):
            out[prefix + (key,)] = value
        else:
            raise TypeError(f"field {'.'.join(prefix + (key,))!r} is {type(value).__name__}, expected a tensor")
    return out


def batch_len(batch: Any) -> int:
    """The leading (row) dim of a tensor, or the one every leaf of a nested batch shares."""
    leaves = [batch] if isinstance(batch, Tensor) else flatten_batch(batch).values()
    lengths = {v.shape[0] if v.dim() else -1 for v in leaves}
    if len(lengths) != 1 or -1 in lengths:
        raise ValueError(f"batch fields must share one leading (transition) dim, got lengths {sorted(lengths)}")
    return lengths.pop()


def unflatten_batch(flat: dict[tuple[str, ...], Tensor]) -> Batch:
    tree: dict = {}
    for path, tensor in flat.items():
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = tensor
    return make_batch(tree)
