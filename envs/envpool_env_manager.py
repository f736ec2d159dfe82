"""EnvPool (envs stepped in C++ threads, a batch per call) behind the env-manager interface."""
from __future__ import annotations

import functools
import logging
from typing import Any, Callable

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.data.collate import true_rows
from ding_lite.registry import ENV_MANAGER_REGISTRY
from ding_lite.utils.default_config import ConfigError, class_default_config, with_defaults
from ding_lite.worker.manager_protocol import EpisodeRecords, Offers
from .base_env import BaseEnv, BaseEnvBatchTimestep, BaseEnvTimestep
from .adapt import ObsAdapter
from .from_gym import adapted_env
from .timestep_columns import check_ready
from .gymnasium_env import ActionScaler, GymnasiumEnv

logger = logging.getLogger(__name__)


class _PoolSpec:
    """What ``env_ref`` offers for an EnvPool run: the spaces the policy sees and the id."""

    def __init__(self, env_id: str, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.env_id, self.observation_space, self.action_space = env_id, observation_space, action_space
        self.reward_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)


@ENV_MANAGER_REGISTRY.register('envpool')
class EnvPoolEnvManager:
    """The config's gymnasium id run by EnvPool (``pip install envpool``; classic control, Box2D and MuJoCo).

    Sync (``batch_size`` None or the env count): every step steps all envs at once. Async (``batch_size`` smaller):
    a step sends the given envs' actions and returns the first ``batch_size`` envs EnvPool finishes, which are
    then the ready ones. Evaluation (static seeds) always runs sync. Episode ends, resets, action scaling,
    ``eval_episode_return`` and ``TimeLimit.truncated`` are as with the ``base`` manager and ``GymnasiumEnv``;
    seeds come from EnvPool's own generators (env i from ``seed + i``), so episodes differ from ``base``'s.
    """

    config = dict(
        type='envpool',            # the registered env manager name
        batch_size=None,           # envs per step; None (or the env count): sync; fewer: async
        num_threads=0,             # EnvPool's worker threads; 0: its default
        episode_num=float('inf'),  # episodes per env before it stops being ready; inf = run forever
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: dict | None = None) -> None:
        if not env_fn:
            raise ValueError("an env manager needs at least one env_fn")
        self._cfg = with_defaults(type(self), cfg)
        self.env_num = len(env_fn)
        batch = self._cfg.batch_size or self.env_num
        if not 0 < batch <= self.env_num:
            raise ConfigError(f"env.manager.batch_size={batch} must be in [1, {self.env_num}] (the env count)")
        self._async = batch < self.env_num
        self._env_cls, self._env_cfg, self._env_id, self._make_kwargs = _gymnasium_spec(env_fn[0])
        self._pool: Any = None
        self._spec: _PoolSpec | None = None
        self._seed, self._dynamic_seed = 0, True
        self._ready_obs: dict[int, Any] = {}
        self._episode_count = np.zeros(self.env_num, dtype=np.int64)
        self._return = np.zeros(self.env_num)
        self._reward_fn = self._reward_transform()
        self._scaler: ActionScaler | None = None
        self._all_ids = list(range(self.env_num))
        self._ready_batch: tuple[list[int], np.ndarray] | None = None  # ready_obs as one array (sync mode)

    # ---- the pool ----
    def _make(self) -> Any:
        import envpool  # the 'envpool' extra
        batch = self._cfg.batch_size if self._async and self._dynamic_seed else None  # evaluation: sync
        kwargs = dict(self._make_kwargs, num_envs=self.env_num, seed=self._seed, num_threads=self._cfg.num_threads)
        if batch:
            kwargs['batch_size'] = batch
        try:
            return envpool.make(self._env_id, env_type='gymnasium', **kwargs)
        except (AssertionError, TypeError, ValueError, RuntimeError) as error:
            raise ConfigError(f"EnvPool cannot make {self._env_id!r} with {self._make_kwargs or 'no options'}: "
                              f"{error} (envpool.list_all_envs() lists its ids)") from None

    def _reward_transform(self) -> Callable[[float], float] | None:
        """An env type's own training reward (e.g. ``bipedalwalker``'s ``rew_clip``), from one instance of it."""
        if self._env_cls._train_reward is GymnasiumEnv._train_reward:
            return None
        probe = self._env_cls(self._env_cfg)
        probe.close()
        return probe._train_reward

    @property
    def _sync(self) -> bool:
        return not (self._async and self._dynamic_seed)

    @property
    def asynchronous(self) -> bool:
        """Whether a step returns other envs than it was given (async mode, outside evaluation)."""
        return not self._sync

    # ---- the interface ----
    def offers(self) -> Offers:
        """What it offers the workers: both step paths, an episode per env (no info metrics or lessons: refused)."""
        return Offers(EpisodeRecords(self.env_num), asynchronous=self.asynchronous)

    def launch(self, reset_param: dict | None = None) -> None:
        self.reset(reset_param)

    def seed(self, seed: int | list[int], dynamic_seed: bool = True) -> None:
        """Env i starts from ``seed + i`` (a list: its first entry); applied at the next ``reset``. Static seeds
        (evaluation) replay the same episodes after every ``reset``."""
        self._seed = int(seed[0] if isinstance(seed, (list, tuple)) else seed)
        self._dynamic_seed = dynamic_seed

    def reset(self, reset_param: dict | None = None) -> None:
        """A new pool from the seed: every env starts a new episode; the episode counters restart."""
        self.close()
        self._pool = self._make()
        self._episode_count[:] = 0
        self._return[:] = 0.0
        if self._sync:
            obs, _ = self._pool.reset()
            obs = self._obs(obs)
            self._ready_obs, self._ready_batch = dict(enumerate(obs)), (list(self._all_ids), obs)
        else:
            self._pool.async_reset()
            self._ready_obs = {}
            self._receive()

    @property
    def ready_obs(self) -> dict[int, Any]:
        return dict(self._ready_obs)

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        """Step the given envs; see the class docstring for which envs return (sync: those given)."""
        self._check_ready(actions)
        if self._sync:
            return self._step_sync(actions)
        return self._per_env(*self._send(list(actions), self._actions(list(actions.values()))))

    def _send(self, env_ids: list[int], actions: np.ndarray) -> tuple[BaseEnvBatchTimestep, dict[int, float]]:
        """Async: send the envs their actions (in the env's space), then receive as ``_receive``."""
        self._pool.send(actions, np.asarray(env_ids, dtype=np.int32))
        for env_id in env_ids:
            del self._ready_obs[env_id]
        return self._receive()

    def _step_sync(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        self._send_all(list(actions), self._actions(list(actions.values())))
        return self._per_env(*self._advance(list(actions)))

    @staticmethod
    def _per_env(step: BaseEnvBatchTimestep, returns: dict[int, float]) -> dict[int, BaseEnvTimestep]:
        """Columns as per-env timesteps with their infos (``returns``: the episodes that ended)."""
        infos = _infos(step, returns, step.env_id)
        return {env_id: BaseEnvTimestep(step.obs[k], np.float32(step.reward[k]), bool(step.done[k]), infos[env_id])
                for k, env_id in enumerate(step.env_id)}

    def ready_obs_batch(self) -> tuple[list[int], np.ndarray] | None:
        """The ready envs' ids and observations as one array (None: no env is ready)."""
        if not self._ready_obs:
            return None
        if self._sync and self._ready_batch is not None:  # kept by reset and _advance
            return self._ready_batch
        return list(self._ready_obs), np.array(list(self._ready_obs.values()))

    def step_batch(self, env_ids: list[int], actions: np.ndarray) -> BaseEnvBatchTimestep:
        """``step`` with row k of ``actions`` (the policy's, unscaled) for env ``env_ids[k]``, as columns: sync, the
        given envs; async, those that came back (see the class docstring)."""
        return self.step_batch_begin(env_ids, actions)()

    def step_batch_begin(self, env_ids: list[int], actions: np.ndarray) -> Callable[[], BaseEnvBatchTimestep]:
        """``step_batch`` begun: sync, the actions are sent and EnvPool's threads step while the caller begins other
        managers' steps (many seeds' pools step at once); the call returned receives the step. Async: at once."""
        self._check_ready(env_ids)
        actions = self._actions(actions)
        if not self._sync:
            done = self._columns(*self._send(env_ids, actions))
            return lambda: done
        self._send_all(env_ids, actions)
        return lambda: self._columns(*self._advance(env_ids))

    def _send_all(self, env_ids: list[int], actions: np.ndarray) -> None:
        """Sync: every env's action sent (``actions`` in the env's space for ``env_ids``; the others a zero action,
        their steps unreported: an evaluation's finished envs)."""
        if env_ids != self._all_ids:
            full = np.zeros((self.env_num,) + actions.shape[1:], actions.dtype)
            full[env_ids] = actions
            actions = full
        self._pool.send(actions)

    @staticmethod
    def _columns(step: BaseEnvBatchTimestep, returns: dict[int, float]) -> BaseEnvBatchTimestep:
        return step._replace(info=_infos(step, returns, returns)) if returns else step

    def _advance(self, env_ids: list[int]) -> tuple[BaseEnvBatchTimestep, dict[int, float]]:
        """Every env's step (``_send_all``) received; ended episodes reset at once. Returns the given envs' columns
        and the returns of the episodes that ended."""
        obs, reward, terminated, truncated, _ = self._pool.recv()
        obs, done = self._obs(obs), terminated | truncated
        reward, returns = self._account(self._all_ids, reward, done)
        ended = list(returns)
        restart = [i for i in ended if self._episode_count[i] < self._cfg.episode_num]
        ready = obs
        if restart:
            reset_obs, _ = self._pool.reset(np.asarray(restart, dtype=np.int32))
            ready = obs.copy()
            ready[restart] = self._obs(reset_obs)
        stay = [i for i in self._ready_obs if i not in ended or i in restart]
        self._ready_obs = dict(zip(stay, ready[stay] if len(stay) != self.env_num else ready))
        self._ready_batch = (stay, ready if len(stay) == self.env_num else ready[stay])
        rows = env_ids if env_ids != self._all_ids else slice(None)
        step = BaseEnvBatchTimestep(list(env_ids), obs[rows], reward[rows], done[rows], terminated[rows], [])
        given = set(env_ids) if returns else ()
        return step, {i: r for i, r in returns.items() if i in given}

    def _check_ready(self, env_ids: Any) -> None:
        check_ready(self._ready_obs, env_ids)

    def _account(self, env_ids: list[int] | np.ndarray, reward: np.ndarray, done: np.ndarray
                 ) -> tuple[np.ndarray, dict[int, float]]:
        """Add a step of envs ``env_ids`` to their episodes: their training rewards (float64 of the float32 that
        ``step`` reports) and the returns of the episodes that ended (the env's own rewards), which restart."""
        self._return[env_ids] += reward
        ended = [int(env_ids[k]) for k in true_rows(done)]
        returns = {i: float(self._return[i]) for i in ended}
        self._return[ended] = 0.0
        self._episode_count[ended] += 1
        if self._reward_fn is not None:
            reward = np.array([self._reward_fn(r) for r in reward.tolist()])
        return reward.astype(np.float32).astype(np.float64), returns

    def _receive(self) -> tuple[BaseEnvBatchTimestep, dict[int, float]]:
        """Async batches until an env is ready: envs back from a reset become ready; the others' steps are
        returned, and an ended episode's env goes out again at once for EnvPool's reset (its next step)."""
        step, returns = self._receive_batch()
        while not self._ready_obs and not self.done:
            more, more_returns = self._receive_batch()
            step = BaseEnvBatchTimestep(step.env_id + more.env_id, *(np.concatenate([a, b]) for a, b in
                                                                     zip(step[1:5], more[1:5])), [])
            returns.update(more_returns)
        return step, returns

    def _receive_batch(self) -> tuple[BaseEnvBatchTimestep, dict[int, float]]:
        obs, reward, terminated, truncated, info = self._pool.recv()
        ids, obs, fresh = info['env_id'], self._obs(obs), info['elapsed_step'] == 0
        self._ready_obs.update((int(i), o) for i, o, new in zip(ids, obs, fresh) if new)
        stepped = ~fresh
        ids, obs, terminated = ids[stepped].tolist(), obs[stepped], terminated[stepped]
        done = terminated | truncated[stepped]
        reward, returns = self._account(ids, reward[stepped], done)
        restart = []
        for env_id, o, ended in zip(ids, obs, done.tolist()):
            if not ended:
                self._ready_obs[env_id] = o
            elif self._episode_count[env_id] < self._cfg.episode_num:
                restart.append(env_id)
        if restart:  # EnvPool resets an env on the step after its last one: send that step now
            template = self._actions([self._spec_action()] * len(restart))
            self._pool.send(template, np.asarray(restart, dtype=np.int32))
        return BaseEnvBatchTimestep(ids, obs, reward, done, terminated, []), returns

    def _actions(self, actions: list[Any] | np.ndarray) -> np.ndarray:
        """The policy's actions (a list of per-env ones, or one array) as one array in the env's own action space
        (Box actions scaled from [-1, 1])."""
        if not isinstance(actions, np.ndarray):
            actions = np.asarray([a.detach().cpu().numpy() if hasattr(a, 'numpy') else np.asarray(a) for a in actions])
        space = self._pool.action_space
        if isinstance(space, gym.spaces.Discrete):
            return actions.astype(np.int32).reshape(len(actions))
        batch = actions.astype(space.dtype, copy=False).reshape((len(actions),) + space.shape)
        if self._env_cfg.get('act_scale', True):
            if self._scaler is None:
                self._scaler = ActionScaler(space)
            batch = self._scaler(batch).astype(space.dtype, copy=False)
        return batch

    def _spec_action(self) -> np.ndarray:
        space = self.action_space
        return np.zeros(space.shape, space.dtype) if isinstance(space, gym.spaces.Box) else np.asarray(0)

    @staticmethod
    def _obs(obs: np.ndarray) -> np.ndarray:
        return obs.astype(np.float32) if obs.dtype == np.float64 else obs

    @property
    def done(self) -> bool:
        return bool((self._episode_count >= self._cfg.episode_num).all())

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self._ready_obs, self._ready_batch = {}, None

    def enable_save_replay(self, replay_path: str | list[str]) -> None:
        raise TypeError("the envpool env manager cannot record videos (EnvPool does not render); evaluate with the "
                        "'base' env manager to record replays")

    # ---- resume ----
    def state_dict(self) -> dict[str, Any]:
        return {'seed': self._seed, 'dynamic_seed': self._dynamic_seed,
                'episode_count': self._episode_count.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """EnvPool's envs cannot be put back mid-episode: a resumed run starts new episodes (from the saved seed)."""
        logger.warning("the envpool env manager cannot replay the episodes a resumed run had under way: they start "
                       "anew")
        self.seed(state['seed'], state['dynamic_seed'])
        self.reset()
        self._episode_count[:] = state['episode_count']

    # ---- spaces ----
    @property
    def env_ref(self) -> _PoolSpec:
        if self._spec is None:
            pool = self._pool if self._pool is not None else self._make()
            space = pool.action_space
            if isinstance(space, gym.spaces.Box) and self._env_cfg.get('act_scale', True):
                space = gym.spaces.Box(-1.0, 1.0, space.shape, np.float32)
            obs_space = pool.observation_space
            if isinstance(obs_space, gym.spaces.Box) and obs_space.dtype == np.float64:
                obs_space = gym.spaces.Box(obs_space.low, obs_space.high, obs_space.shape, np.float32)
            if not ObsAdapter(obs_space).identity:
                raise ConfigError(f"EnvPool's {self._env_id!r} observes {obs_space}, which the models take only "
                                  f"adapted (flattened or transposed); use the 'base' or 'subprocess' env manager")
            self._spec = _PoolSpec(self._env_id, obs_space, space)
            if pool is not self._pool:
                pool.close()
        return self._spec

    @property
    def observation_space(self) -> gym.Space:
        return self.env_ref.observation_space

    @property
    def action_space(self) -> gym.Space:
        return self.env_ref.action_space

    @property
    def reward_space(self) -> gym.Space:
        return self.env_ref.reward_space


def _infos(step: BaseEnvBatchTimestep, returns: dict[int, float], env_ids: Any) -> dict[int, dict]:
    """The infos of ``env_ids`` (rows of ``step``) as ``GymnasiumEnv.step`` gives them: ``TimeLimit.truncated``,
    and ``eval_episode_return`` where an episode ended (``returns``)."""
    rows = {env_id: k for k, env_id in enumerate(step.env_id)}
    infos = {}
    for env_id in env_ids:
        k = rows[env_id]
        infos[env_id] = {'TimeLimit.truncated': bool(step.done[k] and not step.terminated[k])}
        if env_id in returns:
            infos[env_id]['eval_episode_return'] = returns[env_id]
    return infos


def _gymnasium_spec(env_fn: Callable[[], BaseEnv]) -> tuple[type, EasyDict, str, dict]:
    """``(env class, its config, the gymnasium id, make kwargs)`` of an env_fn made by the pipelines
    (``functools.partial(EnvClass, cfg=...)``) over a ``GymnasiumEnv`` type that steps as plain gymnasium."""
    cls = env_fn.func if isinstance(env_fn, functools.partial) else None
    if cls is adapted_env:  # partial(adapted_env, EnvClass, cfg=...): EnvPool's spaces are checked on their own
        cls = env_fn.args[0]
    if not (isinstance(cls, type) and issubclass(cls, GymnasiumEnv)):
        raise ConfigError(f"the envpool env manager runs gymnasium ids: its envs must be a GymnasiumEnv type "
                          f"('gymnasium', 'pendulum', 'mujoco', ...), got {getattr(env_fn, 'func', env_fn)!r}")
    if cls.step is not GymnasiumEnv.step or cls.reset is not GymnasiumEnv.reset:
        raise ConfigError(f"env type {cls.__name__} changes step or reset, which EnvPool cannot run; use the "
                          f"'base' or 'subprocess' env manager")
    cfg = EasyDict(cls.default_config(), **(env_fn.keywords.get('cfg') or {}))
    for key, off in (('frame_stack', 1), ('wrappers', [])):
        if (cfg.get(key) or off) != off:
            raise ConfigError(f"env.{key} runs gymnasium wrappers, which EnvPool cannot run; use the 'base' or "
                              f"'subprocess' env manager")
    for key in ('info_metrics', 'info_stats', 'environment_parameters'):
        if cfg.get(key):
            raise ConfigError(f"env.{key}={cfg[key]!r} needs the envs' info dicts or make keywords, which EnvPool "
                              f"does not offer; use the 'base' or 'subprocess' env manager")
    env_id, kwargs = cls.resolve_id(cfg)
    return cls, cfg, env_id, kwargs
