"""Per-class default configs and the deep merge every layer uses (a leaf: imports nothing else of ding_lite)."""
from __future__ import annotations

import copy

from easydict import EasyDict


class ConfigError(ValueError):
    """A config key or value that the framework cannot accept."""


class ConfigWarning(UserWarning):
    """A config that runs, but not quite as written (an ignored DI-engine key, a fallback)."""


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


def with_defaults(cls: type, cfg: dict | None) -> EasyDict:
    """``cfg`` deep-merged over ``cls.default_config()``: a partial sub-config keeps the defaults it leaves out."""
    return deep_merge(cls.default_config(), cfg or {})


__all__ = ['ConfigError', 'ConfigWarning', 'deep_merge', 'class_default_config', 'with_defaults']
