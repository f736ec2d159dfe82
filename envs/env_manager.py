"""Env managers: N envs behind one ``{env_id: ...}`` interface, reset automatically at episode ends."""
from __future__ import annotations

from typing import Any, Callable

from easydict import EasyDict

from ding_lite.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY
from ding_lite.utils.default_config import class_default_config, with_defaults
from .base_env import BaseEnv, BaseEnvTimestep


@ENV_MANAGER_REGISTRY.register('base')
class BaseEnvManager:
    """All envs in this process, stepped one after another."""

    config = dict(
        type='base',
        episode_num=float('inf'),  # episodes per env before it stops being ready; inf = run forever
        auto_reset=True,           # reset an env as soon as its episode ends
        max_retry=1,               # re-create and retry an env whose reset raises, this many times
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: dict | None = None) -> None:
        if not env_fn:
            raise ValueError("an env manager needs at least one env_fn")
        self._cfg = with_defaults(type(self), cfg)
        self._env_fn = list(env_fn)
        self.env_num = len(self._env_fn)
        self._envs: list[BaseEnv] = []
        self._seeds: list[int] | None = None
        self._dynamic_seed = True
        self._ready_obs: dict[int, Any] = {}
        self._episode_count = [0] * self.env_num

    def launch(self, reset_param: dict | None = None) -> None:
        """Create (if needed), seed and reset every env."""
        if not self._envs:
            self._envs = [fn() for fn in self._env_fn]
        self.reset(reset_param)

    def seed(self, seed: int | list[int], dynamic_seed: bool = True) -> None:
        """Env i gets ``seed + i`` (or ``seed[i]``); applied now if launched, else at launch.

        Without ``dynamic_seed`` (evaluation), env i's k-th episode since ``reset`` starts from seed
        ``seed[i] + k * env_num``: every episode of an evaluation is distinct, and each evaluation the same.
        """
        self._seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed + i for i in range(self.env_num)]
        self._dynamic_seed = dynamic_seed
        for i, env in enumerate(self._envs):
            env.seed(self._seeds[i], dynamic_seed)

    def reset(self, reset_param: dict | None = None) -> None:
        """Reset every env and the episode counters (``launch`` first if needed)."""
        if not self._envs:
            return self.launch(reset_param)
        if self._seeds is not None and self._dynamic_seed:  # restart the sequence (static seeds: per episode)
            self.seed(self._seeds, self._dynamic_seed)
        self._episode_count = [0] * self.env_num
        self._ready_obs = {i: self._reset_env(i) for i in range(self.env_num)}

    def _reset_env(self, env_id: int) -> Any:
        if self._seeds is not None and not self._dynamic_seed:
            self._envs[env_id].seed(self._episode_seed(env_id), False)
        for attempt in range(self._cfg.max_retry + 1):
            try:
                return self._envs[env_id].reset()
            except Exception as error:  # an env may fail for any reason; rebuild it and retry
                if attempt == self._cfg.max_retry:
                    raise RuntimeError(f"env {env_id} failed to reset after {attempt + 1} tries: {error}") from error
                self._recreate(env_id)
        raise AssertionError('unreachable')

    def _recreate(self, env_id: int) -> None:
        try:
            self._envs[env_id].close()
        except Exception:  # closing a broken env may fail too; it is discarded anyway
            pass
        self._envs[env_id] = self._env_fn[env_id]()
        if self._seeds is not None:
            self._envs[env_id].seed(self._episode_seed(env_id), self._dynamic_seed)

    def _episode_seed(self, env_id: int) -> int:
        if self._dynamic_seed:
            return self._seeds[env_id]
        return self._seeds[env_id] + self._episode_count[env_id] * self.env_num

    @property
    def ready_obs(self) -> dict[int, Any]:
        """``{env_id: obs}`` of the envs waiting for an action."""
        return dict(self._ready_obs)

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        timesteps = {}
        for env_id, action in actions.items():
            if env_id not in self._ready_obs:
                raise ValueError(f"env {env_id} is not ready for an action (its episodes are finished)")
            timestep = self._envs[env_id].step(action)
            timesteps[env_id] = timestep
            if not timestep.done:
                self._ready_obs[env_id] = timestep.obs
                continue
            self._episode_count[env_id] += 1
            if self._cfg.auto_reset and self._episode_count[env_id] < self._cfg.episode_num:
                self._ready_obs[env_id] = self._reset_env(env_id)
            else:
                del self._ready_obs[env_id]
        return timesteps

    @property
    def done(self) -> bool:
        return all(count >= self._cfg.episode_num for count in self._episode_count)

    def close(self) -> None:
        for env in self._envs:
            env.close()
        self._envs, self._ready_obs = [], {}

    def _first_env(self) -> BaseEnv:
        if not self._envs:
            self._envs = [fn() for fn in self._env_fn]
        return self._envs[0]

    @property
    def observation_space(self) -> Any:
        return self._first_env().observation_space

    @property
    def action_space(self) -> Any:
        return self._first_env().action_space

    @property
    def reward_space(self) -> Any:
        return self._first_env().reward_space

    @property
    def env_ref(self) -> BaseEnv:
        return self._first_env()


def create_env_manager(manager_cfg: dict, env_fn: list[Callable[[], BaseEnv]]) -> BaseEnvManager:
    """Build the registered manager ``manager_cfg.type`` (default ``'base'``) over ``env_fn``."""
    manager_cfg = EasyDict(manager_cfg or {})
    return ENV_MANAGER_REGISTRY.build(manager_cfg.get('type', 'base'), env_fn, manager_cfg)


def get_vec_env_setting(cfg: dict) -> tuple[type, list[dict], list[dict]]:
    """``(env class, collector env configs, evaluator env configs)`` for ``cfg`` (an env config with ``type``)."""
    env_cls = ENV_REGISTRY.get(cfg['type'])
    return env_cls, env_cls.create_collector_env_cfg(cfg), env_cls.create_evaluator_env_cfg(cfg)
