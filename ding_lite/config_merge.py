"""Merging a user's values over the declared defaults, strictly: an unknown key or a wrong type is a ``ConfigError``
naming its path, with a did-you-mean; DI-engine's legacy keys are kept or dropped with a warning."""
from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import Any, Callable

from easydict import EasyDict

from .registry import closest_match
from .utils.default_config import ConfigError, ConfigWarning


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
    'discount_factor': (lambda v: 0 < v <= 1, 'a number in (0, 1]'),
    'target_theta': (lambda v: 0 < v <= 1, 'a number in (0, 1]'),
    'random_collect_size': (lambda v: v >= 0, 'a number >= 0'),
    'expert_random_collect_size': (lambda v: v >= 0, 'a number >= 0'),
    'nstep': (lambda v: v == 1, '1 (ding_lite computes one-step TD targets)'),
    'collector_num': (lambda v: v > 0, 'a positive number'),
    'num_cpus_per_collector': (lambda v: v > 0, 'a positive number'),
    'weight_sync_interval': (lambda v: v > 0, 'a positive number'),
    'max_actor_restarts': (lambda v: v >= 0, 'a number >= 0'),
}

# Keys of DI-engine's dizoo configs that no ding_lite class declares, so that those configs run unchanged.
# A key with a note keeps its value in the compiled config, where the note says what reads it; a key with
# None is dropped with one warning naming it. Any other undeclared key stays a ConfigError.
LEGACY_KEYS: dict[str, str | None] = {
    'policy.learn.reparameterization': None,      # DI-engine no longer reads it; SAC always reparameterises
    'policy.nstep': None,                          # must be 1: one-step TD targets
    'policy.discount_factor': None,                # DI-engine reads policy.learn.discount_factor
    'policy.expert_random_collect_size': "serial_pipeline_sqil: the online expert's transitions before training",
    'policy.collect.save_path': 'collect_demo_data: the demonstration file when expert_data_path is not given',
    'policy.collect.state_dict_path': "collect_demo_data: the expert's checkpoint when none is given",
    'policy.learn.learner.load_path': "collect_demo_data: the expert's checkpoint (where DI-engine reads it)",
    'policy.collect.data_type': None,              # demonstrations are always ding_lite demonstration files
    'policy.collect.data_path': "serial_pipeline_offline: the data file where policy.learn.data_path is None "
                                "(DI-engine's place for it)",
    'policy.learn.train_epoch': "serial_pipeline_offline: its budget in passes over the data, ceil(rows / batch_size) "
                                "learn steps each, where max_train_iter is not given",
    'env.manager.shared_memory': None,             # the subprocess manager's options, given to another manager
    'env.manager.reset_inplace': None,
    'env.manager.context': None,
    'policy.learn.ignore_down': None,              # DI-engine's MASAC config misspells ignore_done; neither reads it
}
def merge_strict(default: dict, user: dict, path: str = '', docs: Mapping[str, str] | None = None) -> EasyDict:
    """Deep-merge ``user`` over ``default``; unknown keys and wrong types raise ``ConfigError``, whose
    did-you-mean quotes the suggested key's description from ``docs`` (``{full dotted path: text}``).

    DI-engine's legacy keys (``LEGACY_KEYS``) are kept or dropped with a warning instead.
    """
    merged = EasyDict(copy.deepcopy(dict(default)))
    for key, value in user.items():
        full = f"{path}.{key}" if path else str(key)
        if key in default:
            merged[key] = _merge_value(default[key], value, full, docs)
        elif full in LEGACY_KEYS:
            _check_value(value, full)
            if LEGACY_KEYS[full] is not None:
                merged[key] = copy.deepcopy(value)
            else:
                warnings.warn(f"config key {full!r} is a DI-engine key that ding_lite does not use; ignored",
                              ConfigWarning, stacklevel=2)
        else:
            close = closest_match(key, default)
            suggestion = f"{path}.{close}" if path and close else close
            about = f" ({(docs or {})[suggestion]})" if suggestion in (docs or {}) else ''
            hint = f" did you mean {suggestion!r}?{about}" if close else ' no similar key is declared.'
            raise ConfigError(f"unknown config key {full!r};{hint} "
                              f"declared here: {', '.join(sorted(map(str, default))) or '(none)'}")
    return merged


def _merge_value(default: Any, value: Any, path: str, docs: Mapping[str, str] | None = None) -> Any:
    if isinstance(default, dict):
        if not isinstance(value, dict):
            raise ConfigError(f"config key {path!r} must be a dict, got {value!r}")
        return merge_strict(default, value, path, docs) if default else EasyDict(copy.deepcopy(value))
    value = _check_type(default, value, path)
    _check_value(value, path)
    return copy.deepcopy(value)


# keys whose value may also be a list of values of their default's type (several checkpoints to load; a gamma per
# dimension of a multi-dimensional reward)
ALSO_A_LIST = ('learn.learner.hook.load_ckpt_before_run', 'learn.discount_factor')
# keys whose value may also be one of these names (policy.collect.overlap: True, False, or a named form)
ALSO_NAMED = {'collect.overlap': ('auto', 'process', 'stream')}


def _check_type(default: Any, value: Any, path: str) -> Any:
    if default is None or value is None:
        return value
    if isinstance(value, (list, tuple)) and path.endswith(ALSO_A_LIST) and value:
        return [_check_type(default, item, f"{path}[{i}]") for i, item in enumerate(value)]
    names = next((names for key, names in ALSO_NAMED.items() if path.endswith(key)), ())
    if isinstance(value, str) and value in names:
        return value
    expected = type(default)
    if expected is bool:
        ok = isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))
        return _typed(ok, bool(value) if ok else value, path,
                      'a bool' + (f" or one of {', '.join(map(repr, names))}" if names else ''))
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
    if isinstance(value, list) and path.endswith(ALSO_A_LIST):
        for i, item in enumerate(value):
            _check_value(item, f"{path}[{i}]")
        return
    rule = _VALUE_RULES.get(path.rsplit('.', 1)[-1].split('[')[0])
    if rule and isinstance(value, (int, float)) and not isinstance(value, bool) and not rule[0](value):
        raise ConfigError(f"config key {path!r} must be {rule[1]}, got {value!r}")


def check_free_values(tree: dict, path: str) -> None:
    """Apply the value rules inside free-form sub-configs (env) too."""
    for key, value in tree.items():
        full = f"{path}.{key}"
        if isinstance(value, dict):
            check_free_values(value, full)
        else:
            _check_value(value, full)
