"""Envs as gymnasium users bring them to a pipeline's ``env_setting``: a ``VectorEnv``, or a list of envs or
factories (SB3's ``make_vec_env`` / ``DummyVecEnv`` style), besides DI-engine's ``(env_fn, collector cfgs,
evaluator cfgs)``."""
from __future__ import annotations

import logging
import traceback
from typing import Any, Callable

import gymnasium as gym
from easydict import EasyDict

from ding_lite.utils.default_config import ConfigError
from .adapt import AdaptedEnv, ObsAdapter
from .base_env import BaseEnv
from .env_manager import get_vec_env_setting
from .gymnasium_env import GymnasiumEnv

logger = logging.getLogger(__name__)
_ADAPTER_KEYS = ('act_scale', 'wrappers', 'frame_stack')  # what GymnasiumEnv applies around a given env


class GymFactories:
    """``env_fn`` of a setting made from gymnasium factories: ``cfg.factory`` picks the one that makes the env
    (``adapted_env`` then wraps the gymnasium env in a ``GymnasiumEnv``)."""

    def __init__(self, factories: list[Callable[[], gym.Env]]) -> None:
        self.factories = factories

    def __call__(self, cfg: dict) -> gym.Env:
        return self.factories[cfg['factory']]()


class _FromSpec:
    """A factory of envs like one given made: gymnasium's ``make`` of its spec (its registered wrappers too)."""

    def __init__(self, env: gym.Env, where: str) -> None:
        if env.spec is None:
            raise ConfigError(f"env_setting{where}: {env} was given made and has no gymnasium spec to make the run's "
                              f"envs from (each env manager, evaluator and restart makes its own): give a factory "
                              f"instead (lambda: make_my_env())")
        self.spec = env.spec

    def __call__(self) -> gym.Env:
        return gym.make(self.spec)


def _is_di_engine_setting(setting: Any) -> bool:
    return isinstance(setting, (tuple, list)) and len(setting) == 3 and callable(setting[0]) and \
        isinstance(setting[1], list) and isinstance(setting[2], list)


def _factories(setting: Any, env_cfg: EasyDict) -> list[Callable[[], gym.Env]]:
    """The factories of a ``VectorEnv`` (closed: the run makes its own envs), of a list of envs (made again from
    their specs) or factories, or of one env or factory (``env.collector_env_num`` of it)."""
    if isinstance(setting, gym.vector.VectorEnv):
        fns = getattr(setting, 'env_fns', None)
        if not fns:
            raise ConfigError(f"env_setting: {type(setting).__name__} has no per-env factories (env_fns) to make the "
                              f"run's envs from; give gym.make_vec(..., vectorization_mode='sync' or 'async'), or "
                              f"set env.env_id, env.collector_env_num (envs per collector) and "
                              f"create_config.env_manager.type ('base': in this process, 'subprocess': a process "
                              f"each, 'envpool')")
        setting.close()
        return list(fns)
    items = list(setting) if isinstance(setting, (list, tuple)) else [setting] * int(env_cfg.collector_env_num)
    if not items:
        raise ConfigError("env_setting: an empty list; give envs, factories or a gymnasium VectorEnv")
    factories = []
    for i, item in enumerate(items):
        where = f"[{i}]" if isinstance(setting, (list, tuple)) else ''
        if isinstance(item, gym.vector.VectorEnv):
            raise ConfigError(f"env_setting{where} is a {type(item).__name__}: give the vector env itself, not in a "
                              f"list (its envs become the collector's)")
        if isinstance(item, gym.Env):
            factories.append(_FromSpec(item, where))
        elif callable(item):
            factories.append(item)
        else:
            raise ConfigError(f"env_setting{where} is {item!r} ({type(item).__name__}); expected a gymnasium env, a "
                              f"function returning one, a gymnasium VectorEnv, or DI-engine's (env_fn, collector "
                              f"env cfgs, evaluator env cfgs)")
    return factories


def vec_env_setting(env_cfg: EasyDict, setting: Any = None) -> tuple[Callable, list[dict], list[dict]]:
    """DI-engine's ``(env_fn, collector env cfgs, evaluator env cfgs)`` for a pipeline's ``env_setting``: None (the
    config's registered env type), DI-engine's triple (as it is), or gymnasium envs as their users bring them. Those
    set ``env.collector_env_num`` to their number (an ``AsyncVectorEnv``'s envs step in a process each); the
    evaluator's ``env.evaluator_env_num`` envs are made by the same factories in turn."""
    if setting is None:
        return get_vec_env_setting(env_cfg)
    if _is_di_engine_setting(setting):
        return tuple(setting)
    factories = _factories(setting, env_cfg)
    if isinstance(setting, gym.vector.AsyncVectorEnv) and env_cfg.manager.type == 'base':
        env_cfg.manager = EasyDict(type='subprocess')
    if len(factories) != env_cfg.collector_env_num:
        logger.warning(f"env_setting: {len(factories)} envs given: env.collector_env_num={len(factories)} (the "
                       f"config says {env_cfg.collector_env_num})")
        env_cfg.collector_env_num = len(factories)
    base = {key: env_cfg[key] for key in _ADAPTER_KEYS if key in env_cfg}
    collector = [dict(base, factory=k) for k in range(len(factories))]
    evaluator = [dict(base, factory=k % len(factories)) for k in range(int(env_cfg.evaluator_env_num))]
    return GymFactories(factories), collector, evaluator


def adapted_env(env_fn: Callable[..., BaseEnv], **kwargs: Any) -> BaseEnv:
    """``env_fn(**kwargs)`` with its observations adapted, a gymnasium env inside a ``GymnasiumEnv`` (module level: it
    travels to env processes and Ray)."""
    try:
        env = env_fn(**kwargs)
    except AssertionError as error:  # often without a message: where it failed is the lead
        frame = traceback.extract_tb(error.__traceback__)[-1]
        name = getattr(env_fn, '__qualname__', type(env_fn).__name__)
        raise ValueError(f"env {name} failed to build: AssertionError{f': {error}' if str(error) else ''} at "
                         f"{frame.filename}:{frame.lineno} ({frame.line})") from error
    if isinstance(env, gym.Env):  # a gymnasium env of a user's env_setting: the gymnasium adapter around it
        return GymnasiumEnv(kwargs.get('cfg'), env=env)
    space = getattr(env, 'observation_space', None)
    if not isinstance(space, gym.Space):
        return env  # an env that declares no gymnasium space is taken at its word
    adapter = ObsAdapter(space)
    if adapter.identity:  # GymnasiumEnv adapts inside
        return env
    adapter.log_once(getattr(env, 'env_id', type(env).__name__))
    return AdaptedEnv(env, adapter)


__all__ = ['GymFactories', 'vec_env_setting', 'adapted_env']
