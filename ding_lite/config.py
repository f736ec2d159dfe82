"""DI-engine style two-part configs: read, strictly compile against registered defaults, save."""
from __future__ import annotations

import copy
import importlib.util
import math
import os
import time
import uuid
from typing import Any, Callable

from easydict import EasyDict

from .registry import BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY, \
    SERIAL_COLLECTOR_REGISTRY, did_you_mean, import_names
from .utils.checkpoint import atomic_write_text
from .utils.device import resolve_device


class ConfigError(ValueError):
    """A config key or value that the framework cannot accept."""


TOP_LEVEL_KEYS = ('exp_name', 'seed', 'env', 'policy')
# Leaf values checked wherever they appear: name -> (predicate, what is expected).
_VALUE_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    **{
        name: (lambda v: v > 0, 'a positive number')
        for name in (
            'batch_size', 'n_sample', 'n_episode', 'update_per_collect', 'replay_buffer_size', 'unroll_len',
            'collector_env_num', 'evaluator_env_num', 'n_evaluator_episode', 'env_num', 'learning_rate',
            'learning_rate_q', 'learning_rate_policy', 'learning_rate_alpha', 'eval_freq',
        )
    },
    'discount_factor': (lambda v: 0 <= v <= 1, 'a number in [0, 1]'),
    'target_theta': (lambda v: 0 < v <= 1, 'a number in (0, 1]'),
    'random_collect_size': (lambda v: v >= 0, 'a number >= 0'),
}


def deep_merge(base: dict, update: dict) -> EasyDict:
    """A copy of ``base`` with ``update`` merged in, recursing into dicts present in both."""
    out = EasyDict(copy.deepcopy(dict(base)))
    for key, value in update.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) \
            else copy.deepcopy(value)
    return out


def class_default_config(cls: type) -> EasyDict:
    """The ``config`` class attributes along ``cls``'s MRO, deep-merged so subclasses override their parents."""
    merged = EasyDict()
    for klass in reversed(cls.__mro__):
        if 'config' in vars(klass):
            merged = deep_merge(merged, klass.config)
    return merged


def read_config(path: str) -> tuple[EasyDict, EasyDict]:
    """Load ``main_config`` and ``create_config`` from a ``.py`` config file."""
    path = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"config file not found: {path}")
    if not path.endswith('.py'):
        raise ConfigError(f"config file must be a .py file exposing main_config and create_config, got {path}")
    spec = importlib.util.spec_from_file_location(f'_ding_lite_cfg_{uuid.uuid4().hex}', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    missing = [name for name in ('main_config', 'create_config') if not hasattr(module, name)]
    if missing:
        raise ConfigError(f"config file {path} does not define {', '.join(missing)}; expected both "
                          f"main_config and create_config (DI-engine form)")
    return EasyDict(copy.deepcopy(module.main_config)), EasyDict(copy.deepcopy(module.create_config))


def merge_strict(default: dict, user: dict, path: str = '') -> EasyDict:
    """Deep-merge ``user`` over ``default``; unknown keys and wrong types raise ``ConfigError``."""
    merged = EasyDict(copy.deepcopy(dict(default)))
    for key, value in user.items():
        full = f"{path}.{key}" if path else str(key)
        if key not in default:
            hint = did_you_mean(key, default, prefix=f"{path}." if path else '')
            raise ConfigError(f"unknown config key {full!r};{hint or ' no similar key is declared.'} "
                              f"declared here: {', '.join(sorted(map(str, default))) or '(none)'}")
        merged[key] = _merge_value(default[key], value, full)
    return merged


def _merge_value(default: Any, value: Any, path: str) -> Any:
    if isinstance(default, dict):
        if not isinstance(value, dict):
            raise ConfigError(f"config key {path!r} must be a dict, got {value!r}")
        return merge_strict(default, value, path) if default else EasyDict(copy.deepcopy(value))
    value = _check_type(default, value, path)
    _check_value(value, path)
    return copy.deepcopy(value)


def _check_type(default: Any, value: Any, path: str) -> Any:
    if default is None or value is None:
        return value
    expected = type(default)
    if expected is bool:
        ok = isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))
        return _typed(ok, bool(value) if ok else value, path, 'a bool')
    if expected is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return _typed(isinstance(value, int) and not isinstance(value, bool), value, path, 'an int')
    if expected is float:
        return _typed(isinstance(value, (int, float)) and not isinstance(value, bool), value, path, 'a number')
    if expected is str:
        return _typed(isinstance(value, str), value, path, 'a str')
    if expected in (list, tuple):
        return _typed(isinstance(value, (list, tuple)), value, path, 'a list or tuple')
    return value


def _typed(ok: bool, value: Any, path: str, expected: str) -> Any:
    if not ok:
        raise ConfigError(f"config key {path!r} must be {expected}, got {value!r} ({type(value).__name__})")
    return value


def _check_value(value: Any, path: str) -> None:
    rule = _VALUE_RULES.get(path.rsplit('.', 1)[-1])
    if rule and isinstance(value, (int, float)) and not isinstance(value, bool) and not rule[0](value):
        raise ConfigError(f"config key {path!r} must be {rule[1]}, got {value!r}")


def _check_free_values(tree: dict, path: str) -> None:
    """Apply the value rules inside free-form sub-configs (env) too."""
    for key, value in tree.items():
        full = f"{path}.{key}"
        if isinstance(value, dict):
            _check_free_values(value, full)
        else:
            _check_value(value, full)


def _type_of(create_cfg: dict, main_part: dict, part: str, fallback: str | None = None) -> str | None:
    return (create_cfg.get(part) or {}).get('type') or main_part.get('type') or fallback


def _worker_classes(policy_cfg: dict) -> dict[str, type]:
    """Default learner/collector/evaluator classes for ``policy.{learn,collect,eval}``."""
    from . import worker  # lazy: keeps `import ding_lite.config` light
    collector_type = (((policy_cfg.get('collect') or {}).get('collector')) or {}).get('type', 'sample')
    return {'learn.learner': worker.BaseLearner, 'collect.collector': SERIAL_COLLECTOR_REGISTRY.get(collector_type),
            'eval.evaluator': worker.InteractionSerialEvaluator}


def _policy_default(policy_cls: type, policy_cfg: dict, workers: dict[str, type]) -> EasyDict:
    default = EasyDict(policy_cls.default_config())
    for dotted, cls in workers.items():
        field, name = dotted.split('.')
        default.setdefault(field, EasyDict())[name] = cls.default_config()
    model_type = (policy_cfg.get('model') or {}).get('type') or policy_cls.default_model()
    if model_type in MODEL_REGISTRY:
        default.model = EasyDict(MODEL_REGISTRY.get(model_type).default_config(), **default.get('model', {}))
        default.model.setdefault('type', None)
    return default


def compile_config(
        main_cfg: dict | tuple,
        create_cfg: dict | None = None,
        seed: int = 0,
        save_cfg: bool = True,
        save_path: str = 'total_config.py',
        renew_dir: bool = True,
        learner: type | None = None,
        collector: type | None = None,
        evaluator: type | None = None,
) -> EasyDict:
    """Merge the registered classes' defaults under ``main_cfg`` and return the full, checked config.

    ``main_cfg`` may also be a ``(main_config, create_config)`` pair. Types come from ``create_cfg``
    (falling back to ``main_cfg``); its ``import_names`` are imported first so plugins register. With
    ``save_cfg`` and ``renew_dir``, an ``exp_name`` folder that already holds a run gets a time suffix, so an
    earlier run's checkpoints and logs are never overwritten.
    """
    if isinstance(main_cfg, (tuple, list)):
        main_cfg, create_cfg = main_cfg
    main_cfg, create_cfg = EasyDict(copy.deepcopy(dict(main_cfg))), EasyDict(copy.deepcopy(dict(create_cfg or {})))
    for part in create_cfg.values():
        if isinstance(part, dict):
            import_names(part.get('import_names'))
    import_names(create_cfg.get('import_names'))
    for key in main_cfg:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(f"unknown top-level config key {key!r};{did_you_mean(key, TOP_LEVEL_KEYS)} "
                              f"expected only {', '.join(TOP_LEVEL_KEYS)}")
    policy_user = main_cfg.get('policy', EasyDict())
    policy_type = _type_of(create_cfg, policy_user, 'policy')
    if policy_type is None:
        raise ConfigError("no policy type: set create_config.policy.type (e.g. 'sac')")
    policy_cls = POLICY_REGISTRY.get(policy_type)
    workers = _worker_classes(policy_user)
    workers.update({k: v for k, v in (('learn.learner', learner), ('collect.collector', collector),
                                      ('eval.evaluator', evaluator)) if v is not None})
    policy_default = _policy_default(policy_cls, policy_user, workers)
    buffer_type = _type_of(create_cfg, (policy_user.get('other') or {}).get('replay_buffer') or {},
                           'replay_buffer', 'naive')
    policy_default.setdefault('other', EasyDict()).replay_buffer = BUFFER_REGISTRY.get(buffer_type).default_config()
    policy = merge_strict(policy_default, policy_user, 'policy')
    policy.type = policy_type
    policy.other.replay_buffer.type = buffer_type
    policy.device = resolve_device(policy.get('cuda', False), policy.get('device'))
    cfg = EasyDict(exp_name=main_cfg.get('exp_name', 'default_experiment'), seed=seed, policy=policy,
                   env=_compile_env(main_cfg.get('env', EasyDict()), create_cfg))
    evaluator_cfg = policy.eval.get('evaluator', {})
    for key, env_key in (('n_episode', 'n_evaluator_episode'), ('stop_value', 'stop_value')):
        if key in evaluator_cfg and evaluator_cfg[key] is None:  # DI-engine keeps these under env
            evaluator_cfg[key] = cfg.env.get(env_key)
    cfg.create_config = _create_part(create_cfg, cfg)
    if save_cfg and renew_dir and os.path.exists(os.path.join(cfg.exp_name, save_path)):
        cfg.exp_name = f"{cfg.exp_name}_{time.strftime('%y%m%d_%H%M%S')}_{uuid.uuid4().hex[:4]}"
    if save_cfg:
        save_config(cfg, os.path.join(cfg.exp_name, save_path))
    return cfg


def _compile_env(env_user: dict, create_cfg: dict) -> EasyDict:
    env_type = _type_of(create_cfg, env_user, 'env')
    env = EasyDict(ENV_REGISTRY.get(env_type).default_config()) if env_type else EasyDict()
    env.update(copy.deepcopy(env_user))
    manager_type = _type_of(create_cfg, env.get('manager') or {}, 'env_manager', 'base')
    if manager_type in ENV_MANAGER_REGISTRY:
        manager = EasyDict(ENV_MANAGER_REGISTRY.get(manager_type).default_config())
        env.manager = merge_strict(manager, env.get('manager') or {}, 'env.manager')
    _check_free_values(env, 'env')
    env.type = env_type
    env.manager = EasyDict(env.get('manager') or {}, type=manager_type)
    return env


def _create_part(create_cfg: dict, cfg: EasyDict) -> EasyDict:
    names = sorted({n for part in create_cfg.values() if isinstance(part, dict) for n in part.get('import_names', [])}
                   | set(create_cfg.get('import_names', [])))
    return EasyDict(
        env=dict(type=cfg.env.type), env_manager=dict(type=cfg.env.manager.type), policy=dict(type=cfg.policy.type),
        replay_buffer=dict(type=cfg.policy.other.replay_buffer.type), import_names=names,
    )


def save_config(cfg: dict, path: str) -> None:
    """Write ``cfg`` as a runnable ``total_config.py`` that ``read_config`` loads back equal (atomic)."""
    main = {k: v for k, v in cfg.items() if k != 'create_config'}
    create = cfg.get('create_config') or {}
    text = ('"""Compiled by ding_lite.compile_config; re-run with: ding_lite -m serial -c THIS_FILE"""\n'
            f"main_config = {_to_source(main, 'main_config')}\n\ncreate_config = {_to_source(create, 'create_config')}\n")
    atomic_write_text(path, text)


def _to_source(obj: Any, path: str, indent: int = 0) -> str:
    pad, inner = '    ' * indent, '    ' * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return 'dict()'
        items = [f"{inner}{k!r}: {_to_source(v, f'{path}.{k}', indent + 1)}," for k, v in obj.items()]
        return '{\n' + '\n'.join(items) + f'\n{pad}}}'
    if isinstance(obj, (list, tuple)):
        body = ', '.join(_to_source(v, f'{path}[{i}]', indent + 1) for i, v in enumerate(obj))
        return f'[{body}]' if isinstance(obj, list) else f"({body}{',' if len(obj) == 1 else ''})"
    if isinstance(obj, float) and not math.isfinite(obj):
        return f"float({str(obj)!r})"
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return repr(obj)
    if hasattr(obj, 'item') and getattr(obj, 'ndim', 1) == 0:  # numpy / torch scalars
        return repr(obj.item())
    raise ConfigError(f"config value at {path!r} cannot be saved as Python source: {obj!r} ({type(obj).__name__}); "
                      f"use plain numbers, strings, lists and dicts")


__all__ = ['ConfigError', 'read_config', 'compile_config', 'save_config', 'merge_strict', 'deep_merge',
           'class_default_config']
