"""Config files: reading a two-part config file, ``--set`` overrides, and saving a compiled config as a runnable
``total_config.py``."""
from __future__ import annotations

import ast
import copy
import importlib.util
import os
import pprint
import sys
import traceback
import uuid
from typing import Any

from easydict import EasyDict

from .registry import BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY
from .utils.checkpoint import atomic_write_text
from .utils.default_config import ConfigError

# the create_config parts and what a --set may set in them
CREATE_PARTS = {'env': ENV_REGISTRY, 'env_manager': ENV_MANAGER_REGISTRY, 'policy': POLICY_REGISTRY,
                'replay_buffer': BUFFER_REGISTRY}


def read_config(path: str) -> tuple[EasyDict, EasyDict]:
    """Load ``main_config`` and ``create_config`` from a ``.py`` config file."""
    path = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"config file not found: {path}")
    if not path.endswith('.py'):
        raise ConfigError(f"config file must be a .py file exposing main_config and create_config, got {path}")
    if os.path.dirname(path) not in sys.path:  # the config's import_names may name modules beside it
        sys.path.append(os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(f'_ding_lite_cfg_{uuid.uuid4().hex}', path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)  # a config file is Python: it runs as code
    except Exception as error:
        line = getattr(error, 'lineno', None) or _error_line(error, path)
        raise ConfigError(f"config file {path} failed to import{f' (line {line})' if line else ''}: "
                          f"{type(error).__name__}: {error}") from error
    missing = [name for name in ('main_config', 'create_config') if not hasattr(module, name)]
    if missing:
        raise ConfigError(f"config file {path} does not define {', '.join(missing)}; expected both "
                          f"main_config and create_config (DI-engine form)")
    return EasyDict(copy.deepcopy(module.main_config)), EasyDict(copy.deepcopy(module.create_config))


def _error_line(error: BaseException, path: str) -> int | None:
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == path]
    return frames[-1].lineno if frames else None


_CREATE_KEYS = ('type', 'import_names')


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``['policy.learn.batch_size=512', ...]`` (``--set``) as ``{dotted key: value}``; each value is a Python
    literal (``512``, ``3e-4``, ``True``, ``[64, 64]``, ``None``), and anything else is taken as a string."""
    overrides = {}
    for item in items:
        key, sep, text = item.partition('=')
        if not sep or not key.strip() or ' ' in key.strip():
            raise ConfigError(f"--set takes KEY=VALUE, e.g. policy.learn.batch_size=512 or create.env.type=pendulum; "
                              f"got {item!r}")
        try:
            overrides[key.strip()] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            overrides[key.strip()] = text.strip()  # a bare word: Pendulum-v1, sac, cpu
    return overrides


def apply_overrides(main_cfg: dict, create_cfg: dict, overrides: dict[str, Any] | None) -> tuple[EasyDict, EasyDict]:
    """Copies of the two configs with each ``{dotted key: value}`` set (``create.``-prefixed keys in
    ``create_config``, the rest in ``main_config``); ``compile_config`` then checks them as if written in the file."""
    main_cfg, create_cfg = EasyDict(copy.deepcopy(dict(main_cfg))), EasyDict(copy.deepcopy(dict(create_cfg or {})))
    for key, value in (overrides or {}).items():
        create = key.startswith('create.')
        parts = key[len('create.'):].split('.') if create else key.split('.')
        if create and not (len(parts) == 1 and parts[0] == 'import_names' or
                           len(parts) == 2 and parts[0] in CREATE_PARTS and parts[1] in _CREATE_KEYS):
            raise ConfigError(f"unknown create_config key {key!r}; expected create.<part>.type or "
                              f"create.<part>.import_names with part one of {', '.join(CREATE_PARTS)}")
        node = create_cfg if create else main_cfg
        for i, part in enumerate(parts[:-1]):
            if node.get(part) is None:
                node[part] = EasyDict()
            elif not isinstance(node[part], dict):
                raise ConfigError(f"override {key!r}: {'.'.join(parts[:i + 1])!r} is {node[part]!r}, not a section")
            node = node[part]
        node[parts[-1]] = value
    return main_cfg, create_cfg


def save_config(cfg: dict, path: str, overrides: dict[str, Any] | None = None,
                title: str = 'Compiled by ding_lite.compile_config') -> None:
    """Write ``cfg`` as a runnable ``total_config.py`` that ``read_config`` loads back equal (atomic); the
    ``overrides`` it was compiled with are listed in a comment (their values are in the config)."""
    main = _plain({k: v for k, v in cfg.items() if k != 'create_config'}, 'main_config')
    create = _plain(cfg.get('create_config') or {}, 'create_config')
    noted = ''.join(f"#   --set {k}={v!r}\n" for k, v in (overrides or {}).items())
    if overrides is None and os.path.isfile(path):  # saved again (shapes read from the env): keep its note
        with open(path) as f:
            noted = ''.join(line for line in f if line.startswith('#   --set '))
    text = (f'"""{title}; re-run with: ding_lite -m serial -c THIS_FILE"""\n'
            + (f"# overrides (--set) applied over the config file:\n{noted}" if noted else '') +
            'from math import inf, nan  # noqa: F401 (non-finite values print as inf / nan)\n\n'
            f"main_config = {pprint.pformat(main, width=110, sort_dicts=False)}\n\n"
            f"create_config = {pprint.pformat(create, width=110, sort_dicts=False)}\n")
    atomic_write_text(path, text)


def _plain(obj: Any, path: str) -> Any:
    """``obj`` as plain dicts, lists and Python scalars, so that its ``repr`` is valid source."""
    if isinstance(obj, dict):
        return {k: _plain(v, f'{path}.{k}') for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain(v, f'{path}[{i}]') for i, v in enumerate(obj))
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if hasattr(obj, 'item') and getattr(obj, 'ndim', 1) == 0:  # numpy / torch scalars
        return obj.item()
    raise ConfigError(f"config value at {path!r} cannot be saved as Python source: {obj!r} ({type(obj).__name__}); "
                      f"use plain numbers, strings, lists and dicts")
