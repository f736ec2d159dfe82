"""Env managers: N envs behind one ``{env_id: ...}`` interface, reset automatically at episode ends."""
from __future__ import annotations

import functools
import logging
import os
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch
from easydict import EasyDict

from ding_lite.data.collate import true_rows
from ding_lite.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY
from ding_lite.utils.checkpoint import to_safe
from ding_lite.utils.default_config import class_default_config, with_defaults
from ding_lite.worker.lessons import lesson_hooks
from ding_lite.worker.manager_protocol import EpisodeRecords, Offers
from .base_env import BaseEnv, BaseEnvBatchTimestep, BaseEnvTimestep
from .timestep_columns import batch_of_timesteps, check_ready

if TYPE_CHECKING:
    from ding_lite.utils.curriculum import EpisodeParameters
    from ding_lite.worker.episode_metrics import InfoStats

logger = logging.getLogger(__name__)


@ENV_MANAGER_REGISTRY.register('base')
class BaseEnvManager:
    """All envs in this process, stepped one after another.

    Subclasses change where the envs live through the ``_env_*`` primitives; seeding, resets with retries,
    episode counting and the resume state are shared.
    """

    config = dict(
        type='base',               # the registered env manager name
        episode_num=float('inf'),  # episodes per env before it stops being ready; inf = run forever
        auto_reset=True,           # reset an env as soon as its episode ends
        max_retry=1,               # re-create and retry an env whose reset raises, this many times
    )
    asynchronous = False  # step returns exactly the envs it was given (an async manager: others that finished)
    info_metrics: list[str] = []  # info keys collectors and evaluators keep per episode (the run's env.info_metrics)
    info_stats: InfoStats | None = None  # every step's info values aggregated per log (the run's env.info_stats)
    parameters: EpisodeParameters | None = None  # each episode's env.environment_parameters (ML-Agents')

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    def offers(self) -> Offers:
        """What it offers the workers (``ding_lite.worker.manager_protocol``): both step paths, an episode per env,
        its info metrics, the lessons of its ``parameters``."""
        return Offers(EpisodeRecords(self.env_num), asynchronous=self.asynchronous,
                      info_metrics=tuple(self.info_metrics), hooks=lesson_hooks(self.parameters))

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: dict | None = None) -> None:
        if not env_fn:
            raise ValueError("an env manager needs at least one env_fn")
        self._cfg = with_defaults(type(self), cfg)
        self._env_fn = list(env_fn)
        self.env_num = len(self._env_fn)
        self._envs: list[BaseEnv] = []
        self._step_many: Any = None  # the envs' shared step_many (False: none), looked up once per set of envs
        self._launched = False
        self._seeds: list[int] | None = None
        self._dynamic_seed = True
        self._ready_obs: dict[int, Any] = {}
        self._episode_count = [0] * self.env_num
        self._actions: list[list[Any]] = [[] for _ in range(self.env_num)]  # since each env's reset (resume)
        self._reset_state: list[dict] = [{} for _ in range(self.env_num)]   # each env's state before that reset
        self._episode_values: list[dict | None] = [None] * self.env_num  # its episode's environment parameters

    # ---- primitives: where the envs live (overridden by SubprocessEnvManager) ----
    def _env_create(self) -> None:
        if not self._envs:
            self._envs = [fn() for fn in self._env_fn]
            self._step_many = None

    def _env_seed(self, env_id: int, seed: int, dynamic_seed: bool) -> None:
        self._envs[env_id].seed(seed, dynamic_seed)

    def _env_reset(self, env_id: int) -> tuple[Any, dict]:
        """``(obs, the env's state just before the reset)``."""
        env = self._envs[env_id]
        state = env.state_dict() if hasattr(env, 'state_dict') else {}
        return env.reset(), state

    def _env_load_state(self, env_id: int, state: dict) -> None:
        if state and hasattr(self._envs[env_id], 'load_state_dict'):
            self._envs[env_id].load_state_dict(state)

    def _env_set_parameters(self, env_id: int, values: dict) -> None:
        self._envs[env_id].set_parameters(values, self.parameters.via)

    def _env_step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        return {env_id: self._envs[env_id].step(action) for env_id, action in actions.items()}

    def _env_step_many(self, env_ids: list[int], actions: np.ndarray) -> tuple | None:
        """Envs of one type that offers ``step_many`` step through it (one action scaling for all); None: they
        step one by one."""
        if self._step_many is None:
            kind = type(self._envs[0])
            same = all(type(env) is kind for env in self._envs)
            self._step_many = same and getattr(kind, 'step_many', None) or False
        if not self._step_many:
            return None
        envs = [self._envs[i] for i in env_ids]
        return self._step_many(envs, actions, all_info=True) if self.info_stats is not None else \
            self._step_many(envs, actions)

    def _env_recreate(self, env_id: int) -> None:
        try:
            self._envs[env_id].close()
        except Exception:  # closing a broken env may fail too; it is discarded anyway
            pass
        self._envs[env_id] = self._env_fn[env_id]()
        self._step_many = None

    def _env_close(self) -> None:
        for env in self._envs:
            env.close()
        self._envs, self._step_many = [], None

    # ---- the interface ----
    def launch(self, reset_param: dict | None = None) -> None:
        """Create (if needed), seed and reset every env."""
        if not self._launched:
            self._env_create()
            self._launched = True
            if self._seeds is not None:
                self.seed(self._seeds, self._dynamic_seed)
        self.reset(reset_param)

    def seed(self, seed: int | list[int], dynamic_seed: bool = True) -> None:
        """Env i gets ``seed + i`` (or ``seed[i]``); applied now if launched, else at launch.

        Without ``dynamic_seed`` (evaluation), env i's k-th episode since ``reset`` starts from seed
        ``seed[i] + k * env_num``: every episode of an evaluation is distinct, and each evaluation the same.
        """
        self._seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed + i for i in range(self.env_num)]
        self._dynamic_seed = dynamic_seed
        if self._launched:
            for i in range(self.env_num):
                self._env_seed(i, self._seeds[i], dynamic_seed)

    def reset(self, reset_param: dict | None = None) -> None:
        """Reset every env and the episode counters (``launch`` first if needed)."""
        if not self._launched:
            return self.launch(reset_param)
        if self._seeds is not None and self._dynamic_seed:  # restart the sequence (static seeds: per episode)
            self.seed(self._seeds, self._dynamic_seed)
        if self.parameters is not None and not self._dynamic_seed:  # an evaluation's: the same draws each time
            self.parameters.restart()
        self._episode_count = [0] * self.env_num
        self._ready_obs = {i: self._reset_env(i) for i in range(self.env_num)}

    def _reset_env(self, env_id: int) -> Any:
        values = self.parameters.draw() if self.parameters is not None else None
        for attempt in range(self._cfg.max_retry + 1):
            try:
                if self._seeds is not None and (attempt or not self._dynamic_seed):
                    self._env_seed(env_id, self._episode_seed(env_id), self._dynamic_seed)
                if values is not None:
                    self._env_set_parameters(env_id, values)
                obs, self._reset_state[env_id] = self._env_reset(env_id)
                self._episode_values[env_id] = values
                self._actions[env_id] = []
                return obs
            except Exception as error:  # an env may fail for any reason; rebuild it and retry
                if attempt == self._cfg.max_retry:
                    given = '' if values is None else \
                        f" with env.environment_parameters {values} (via {self.parameters.via!r})"
                    raise RuntimeError(f"env {env_id} failed to reset{given} after {attempt + 1} tries "
                                       f"(max_retry={self._cfg.max_retry}); last error: {error}") from error
                logger.warning(f"env {env_id} failed to reset ({error}); re-creating it")
                self._env_recreate(env_id)
        raise AssertionError('unreachable')

    def _episode_seed(self, env_id: int) -> int:
        if self._dynamic_seed:
            return self._seeds[env_id]
        return self._seeds[env_id] + self._episode_count[env_id] * self.env_num

    @property
    def ready_obs(self) -> dict[int, Any]:
        """``{env_id: obs}`` of the envs waiting for an action."""
        return dict(self._ready_obs)

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        """Step the given envs. A timestep with ``info['abnormal']`` ends an episode that broke off (the env
        was restarted): it is no transition, and the env's next obs starts a new episode."""
        self._check_ready(actions)
        return self._stepped(actions, self._env_step(actions))

    def _stepped(self, actions: dict[int, Any], timesteps: dict[int, BaseEnvTimestep]) -> dict[int, BaseEnvTimestep]:
        """``step``'s bookkeeping of the envs' ``timesteps`` for ``actions``."""
        for env_id, timestep in timesteps.items():
            self._after_step(env_id, timestep.obs, timestep.done, actions[env_id])
            if self.info_stats is not None:
                self.info_stats.record(timestep.info)
        return timesteps

    def _check_ready(self, env_ids: Any) -> None:
        check_ready(self._ready_obs, env_ids)

    def _after_step(self, env_id: int, obs: Any, done: Any, action: Any) -> None:
        """An env's step is done: its next obs is ready (the action kept for a resume), or its episode ended and
        it resets or stops."""
        if not done:
            self._ready_obs[env_id] = obs
            self._actions[env_id].append(action)
        else:
            self._ended(env_id)

    def _ended(self, env_id: int) -> None:
        """An env's episode ended: it resets (its next obs ready) or, its episodes done, stops."""
        self._episode_count[env_id] += 1
        if self._cfg.auto_reset and self._episode_count[env_id] < self._cfg.episode_num:
            self._ready_obs[env_id] = self._reset_env(env_id)
        else:
            del self._ready_obs[env_id]
            self._actions[env_id] = []

    def ready_obs_batch(self) -> tuple[list[int], np.ndarray] | None:
        """The ready envs' ids and their observations stacked into one array, or None where observations are not
        one array each (dicts, say)."""
        ready = list(self._ready_obs.values())
        if not ready or type(ready[0]) is not np.ndarray or ready[0].dtype.kind == 'O':
            return None
        return list(self._ready_obs), np.array(ready)

    def step_batch(self, env_ids: list[int], actions: np.ndarray) -> BaseEnvBatchTimestep:
        """``step`` with row k of ``actions`` for env ``env_ids[k]``, its result as columns in that order."""
        self._check_ready(env_ids)
        stepped = self._env_step_many(env_ids, actions)
        if stepped is not None:  # the envs stepped together: no per-env timesteps to take apart
            return self._columns_stepped(env_ids, actions, stepped)
        return batch_of_timesteps(self, env_ids, self.step(dict(zip(env_ids, actions))))

    def _columns_stepped(self, env_ids: list[int], actions: np.ndarray, stepped: tuple) -> BaseEnvBatchTimestep:
        """``step_batch``'s bookkeeping of envs that stepped together: ``stepped`` is ``(obs, reward, done,
        terminated, {row: info})`` as ``_env_step_many`` gives it (every row's info where ``info_stats`` is kept)."""
        obs, reward, done, terminated, ended_info = stepped
        ready, kept = self._ready_obs, self._actions
        for env_id, o, action in zip(env_ids, obs, actions):  # _after_step's common case for every env
            ready[env_id] = o
            kept[env_id].append(action)
        ended = true_rows(done)
        for k in ended:
            self._ended(env_ids[k])
        if self.info_stats is not None:  # every env's info came back: record it, hand on the ended ones
            for i in ended_info.values():
                self.info_stats.record(i)
            ended_info = {k: ended_info[k] for k in ended}
        info = {env_ids[k]: i for k, i in ended_info.items()} if ended_info else None
        return BaseEnvBatchTimestep(list(env_ids), np.array(obs), reward, done, terminated, [], info)

    def step_batch_begin(self, env_ids: list[int], actions: np.ndarray) -> Callable[[], BaseEnvBatchTimestep]:
        """``step_batch`` begun: the call returned finishes it. Envs in processes of their own step meanwhile, so
        the caller can begin other managers' steps before it finishes any (many seeds' envs step at once); envs
        in this process step here and now."""
        timestep = self.step_batch(env_ids, actions)
        return lambda: timestep

    @property
    def done(self) -> bool:
        return all(count >= self._cfg.episode_num for count in self._episode_count)

    def close(self) -> None:
        self._env_close()
        self._launched, self._ready_obs = False, {}

    def enable_save_replay(self, replay_path: str | list[str]) -> None:
        """Record every episode as a video (DI-engine's name): env i into ``<replay_path>/env<i>/`` (or
        ``replay_path[i]``). The envs are made anew, recording, at the next ``launch``/``reset``."""
        paths = list(replay_path) if isinstance(replay_path, (list, tuple)) else \
            [os.path.join(replay_path, f'env{i}') for i in range(self.env_num)]
        self._env_fn = [functools.partial(_recording, fn, path) for fn, path in zip(self._env_fn, paths)]
        self.close()

    # ---- resume ----
    def state_dict(self) -> dict[str, Any]:
        """Seeds, episode counts, and per ready env its state before the last reset plus the actions since."""
        envs = {}
        for env_id, obs in self._ready_obs.items():
            actions = [torch.as_tensor(np.asarray(a)) for a in self._actions[env_id]]
            envs[env_id] = {'reset_state': to_safe(self._reset_state[env_id]), 'obs': to_safe(obs),
                            'parameters': self._episode_values[env_id],
                            'actions': torch.stack(actions) if actions else None}
        return {'seeds': self._seeds, 'dynamic_seed': self._dynamic_seed, 'episode_count': list(self._episode_count),
                'envs': envs, **({'environment_parameters': self.parameters.state_dict()} if self.parameters else {})}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue where ``state_dict`` was taken: reset each env from its saved state and replay its actions."""
        if not self._launched:
            self.launch()
        self._seeds, self._dynamic_seed = state['seeds'], state['dynamic_seed']
        self._episode_count = list(state['episode_count'])
        envs = {int(k): v for k, v in state['envs'].items()}
        if self.parameters is not None and 'environment_parameters' in state:
            self.parameters.load_state_dict(state['environment_parameters'])
        self._ready_obs = {}
        for env_id, env_state in envs.items():
            if env_state.get('parameters') is not None:  # the episode's env, made as it was
                self._env_set_parameters(env_id, env_state['parameters'])
                self._episode_values[env_id] = env_state['parameters']
            self._env_load_state(env_id, env_state['reset_state'])
            self._ready_obs[env_id], self._reset_state[env_id] = self._env_reset(env_id)
            self._actions[env_id] = []
        longest = max((len(s['actions']) for s in envs.values() if s['actions'] is not None), default=0)
        for k in range(longest):
            actions = {i: s['actions'][k] for i, s in envs.items() if s['actions'] is not None and len(s['actions']) > k}
            for env_id, timestep in self._env_step(actions).items():
                self._ready_obs[env_id] = timestep.obs
                self._actions[env_id].append(actions[env_id])
        for env_id, env_state in envs.items():
            if not _same(self._ready_obs[env_id], env_state['obs']):
                logger.warning(f"env {env_id} did not replay its episode exactly (a non-deterministic env?): the "
                               f"resumed run continues from where the replay led")

    @property
    def observation_space(self) -> Any:
        return self.env_ref.observation_space

    @property
    def action_space(self) -> Any:
        return self.env_ref.action_space

    @property
    def reward_space(self) -> Any:
        return self.env_ref.reward_space

    @property
    def env_ref(self) -> BaseEnv:
        """An env of this manager's kind, for its spaces and id."""
        self._env_create()
        return self._envs[0]


def _recording(env_fn: Callable[[], BaseEnv], replay_path: str) -> BaseEnv:
    """``env_fn()`` with its episodes recorded into ``replay_path`` (module level: it travels to env processes)."""
    env = env_fn()
    if not hasattr(env, 'enable_save_replay'):
        raise TypeError(f"env {type(env).__name__} cannot record replays (it has no enable_save_replay)")
    env.enable_save_replay(replay_path)
    return env


def _same(obs: Any, saved: Any) -> bool:
    if isinstance(obs, dict):  # a dict of arrays (a multi-agent env's rows): key by key
        return isinstance(saved, dict) and obs.keys() == saved.keys() and all(_same(obs[k], saved[k]) for k in obs)
    try:
        return bool(np.array_equal(np.asarray(obs), np.asarray(saved)))
    except (TypeError, ValueError):  # structured observations: not compared
        return True


def create_env_manager(manager_cfg: dict, env_fn: list[Callable[[], BaseEnv]]) -> BaseEnvManager:
    """Build the registered manager ``manager_cfg.type`` (default ``'base'``) over ``env_fn``."""
    manager_cfg = EasyDict(manager_cfg or {})
    return ENV_MANAGER_REGISTRY.build(manager_cfg.get('type', 'base'), env_fn, manager_cfg)


def get_vec_env_setting(cfg: dict) -> tuple[type, list[dict], list[dict]]:
    """``(env class, collector env configs, evaluator env configs)`` for ``cfg`` (an env config with ``type``)."""
    env_cls = ENV_REGISTRY.get(cfg['type'])
    return env_cls, env_cls.create_collector_env_cfg(cfg), env_cls.create_evaluator_env_cfg(cfg)
