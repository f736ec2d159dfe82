"""Demonstration files: transitions plus a header (fields, shapes, dtypes, env, count, returns), written atomically."""
from __future__ import annotations

import datetime
import math
from typing import Any

from torch import Tensor

from ..utils.checkpoint import load_file, save_file
from .collate import Batch, default_collate, flatten_batch, unflatten_batch

DEMO_KIND = 'ding_lite.demonstrations'
DEMO_VERSION = 1
REQUIRED_FIELDS = ('obs', 'action', 'reward', 'next_obs', 'done')


def save_demo(path: str, transitions: list[dict] | Batch, env_id: str, **header: Any) -> dict[str, Any]:
    """Write ``transitions`` with a header to ``path`` (temp file, then rename); returns the header."""
    batch = default_collate(list(transitions)) if isinstance(transitions, (list, tuple)) else transitions
    flat = {'.'.join(k): v.detach().cpu() for k, v in flatten_batch(batch).items()}
    missing = [f for f in REQUIRED_FIELDS if f not in flat]
    if missing:
        raise ValueError(f"demonstrations need fields {REQUIRED_FIELDS}; missing {missing}")
    count = int(flat['obs'].shape[0])
    header = dict(header, env_id=env_id, count=count, created=datetime.datetime.now().isoformat(timespec='seconds'),
                  fields={k: {'shape': list(v.shape[1:]), 'dtype': str(v.dtype).replace('torch.', '')}
                          for k, v in flat.items()})
    save_file(path, {'kind': DEMO_KIND, 'version': DEMO_VERSION, 'header': header, 'data': flat})
    return header


def load_demo(path: str, obs_shape: Any = None, action_shape: Any = None, env_id: str | None = None,
              discrete: bool | None = None) -> tuple[Batch, dict[str, Any]]:
    """Read a demonstration file and check it against the run: ``(batch, header)``.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the problem for a truncated,
    foreign, older-version or mismatched one.
    """
    state = load_file(path, 'demonstration file')
    if not isinstance(state, dict) or state.get('kind') != DEMO_KIND:
        raise ValueError(f"{path} is not a ding_lite demonstration file (write one with collect_demo_data)")
    if state.get('version') != DEMO_VERSION:
        raise ValueError(f"{path} has demonstration format version {state.get('version')}, expected {DEMO_VERSION}")
    header, data = state['header'], state['data']
    for name, spec in header['fields'].items():
        tensor = data.get(name)
        if not isinstance(tensor, Tensor) or tensor.shape[0] != header['count'] or list(tensor.shape[1:]) != spec['shape']:
            got = None if not isinstance(tensor, Tensor) else tuple(tensor.shape)
            raise ValueError(f"{path} is damaged: field {name!r} should hold {header['count']} x {spec['shape']}, "
                             f"got {got}")
    _check_against_run(path, header, obs_shape, action_shape, env_id, discrete)
    return unflatten_batch({tuple(k.split('.')): v for k, v in data.items()}), header


def _size(shape: Any) -> int:
    return int(math.prod(shape)) if isinstance(shape, (list, tuple)) else int(shape)


def _check_against_run(path: str, header: dict, obs_shape: Any, action_shape: Any, env_id: str | None,
                       discrete: bool | None) -> None:
    fields = header['fields']
    if env_id is not None and header.get('env_id') != env_id:
        raise ValueError(f"{path} was recorded on env {header.get('env_id')!r}, but this run uses {env_id!r}")
    if obs_shape is not None and 'obs' in fields and _size(fields['obs']['shape'] or 1) != _size(obs_shape):
        raise ValueError(f"{path} has observations of shape {fields['obs']['shape']}, but policy.model.obs_shape "
                         f"is {obs_shape!r}")
    if discrete is not None and fields['action']['dtype'].startswith('float') == discrete:
        kind = 'continuous' if discrete else 'discrete'
        raise ValueError(f"{path} holds {kind} actions ({fields['action']['dtype']}), which this policy cannot use")
    if action_shape is not None and not discrete and _size(fields['action']['shape'] or 1) != _size(action_shape):
        raise ValueError(f"{path} has actions of shape {fields['action']['shape']}, but policy.model.action_shape "
                         f"is {action_shape!r}")


def demo_buffer(path: str, buffer_cls: type, policy_cfg: Any, env_id: str | None, discrete: bool,
                device: str = 'cpu', buffer_cfg: dict | None = None) -> Any:
    """A replay buffer on ``device`` filled with the checked demonstrations of ``path`` (sized to hold them all;
    ``buffer_cfg``: the rest of its config)."""
    model = policy_cfg.get('model', {})
    batch, header = load_demo(path, model.get('obs_shape') or model.get('agent_obs_shape'),
                              model.get('action_shape'), env_id, discrete)
    buffer = buffer_cls({**(buffer_cfg or {}), 'replay_buffer_size': header['count'], 'device': device})
    buffer.push(batch)
    return buffer
