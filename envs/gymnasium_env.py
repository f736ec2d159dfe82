"""Adapter from any gymnasium env to ``BaseEnv``."""
from __future__ import annotations

import logging
import os
from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.data.collate import to_ndarray, true_rows
from ding_lite.registry import ENV_REGISTRY
from ding_lite.utils.default_config import ConfigError
from .hybrid import HybridActions
from .adapt import AdaptObservation, ObsAdapter, apply_wrappers
from .base_env import BaseEnv, BaseEnvTimestep, EpisodeSeeds
from .reset_options import ReadOptions


_MUJOCO_V5 = ('HalfCheetah', 'Hopper', 'Walker2d', 'Swimmer', 'Reacher', 'Pusher', 'InvertedPendulum',
              'InvertedDoublePendulum')
# DI-engine's gym-era ids -> (installed gymnasium id, make kwargs). MuJoCo v2/v3 need mujoco-py; Ant and Humanoid
# map to v4, the last version with v3's observation size (Ant 111, Humanoid 376).
GYM_ERA_IDS: dict[str, tuple[str, dict]] = {
    'Pendulum-v0': ('Pendulum-v1', {}),
    'LunarLander-v2': ('LunarLander-v3', {}),
    'LunarLanderContinuous-v2': ('LunarLanderContinuous-v3', {}),
    'BipedalWalker-v2': ('BipedalWalker-v3', {}),
    'BipedalWalkerHardcore-v2': ('BipedalWalkerHardcore-v3', {}),
    **{f'{name}-v{v}': (f'{name}-v5', {}) for name in _MUJOCO_V5 for v in (2, 3)},
    **{f'Ant-v{v}': ('Ant-v4', {'use_contact_forces': True}) for v in (2, 3)},
    **{f'{name}-v{v}': (f'{name}-v4', {}) for name in ('Humanoid', 'HumanoidStandup') for v in (2, 3)},
}
_logged_ids: set[str] = set()
_ACTION_KEYS: dict = {}
logger = logging.getLogger(__name__)


class ActionScaler:
    """Maps actions in [-1, 1] (clipped there) into a Box's ``[low, high]``, for one env or a batch of them."""

    def __init__(self, space: gym.spaces.Box) -> None:
        self.low, self.half_range = space.low, 0.5 * (space.high - space.low)
        # the bounds as arrays of the action's dtype: ufuncs take them ~3x faster than Python floats
        self._minus_one, self._one = np.full(space.shape, -1, space.dtype), np.ones(space.shape, space.dtype)

    def __call__(self, action: np.ndarray) -> np.ndarray:
        clipped = np.minimum(np.maximum(action, self._minus_one), self._one)
        return self.low + (clipped + self._one) * self.half_range


# the packages that register well-known families of gymnasium ids when imported
ID_PACKAGES = {'MiniGrid': 'minigrid', 'BabyAI': 'minigrid', 'PointMaze': 'gymnasium_robotics',
               'AntMaze': 'gymnasium_robotics', 'Fetch': 'gymnasium_robotics', 'HandManipulate': 'gymnasium_robotics',
               'Adroit': 'gymnasium_robotics', 'ALE/': 'ale_py', 'highway': 'highway_env', 'Metaworld': 'metaworld'}


def make_error(env_id: str, error: Exception) -> str:
    """What to tell a user whose ``gymnasium.make(env_id)`` failed: an id no imported package registers (the
    package to import, and how), or the env's own failure (its package, the error's type and message)."""
    upstream = f"{type(error).__name__}: {error}" if str(error) else f"{type(error).__name__} (no message)"
    if isinstance(error, (gym.error.NameNotFound, gym.error.NamespaceNotFound, gym.error.VersionNotFound)) and \
            not isinstance(error, gym.error.DeprecatedEnv):
        package = next((p for prefix, p in ID_PACKAGES.items() if env_id.split(':')[-1].startswith(prefix)), None)
        which = f"its package ({package!r}, pip install it)" if package else "the package that registers it"
        example = package or 'my_envs'
        return (f"cannot make gymnasium env {env_id!r}: {upstream.rstrip('.')}. An env of another package exists once "
                f"{which} is imported: list it in create_config.env.import_names (['{example}']), or write the id as "
                f"'{example}:{env_id.split(':')[-1]}' (gymnasium imports the package first)")
    try:
        entry = gym.spec(env_id.split(':')[-1]).entry_point
        module = entry.split(':')[0] if isinstance(entry, str) else getattr(entry, '__module__', '?')
        source = f" (package {module.split('.')[0]!r}, module {module})"
    except Exception:
        source = ''
    return f"cannot make gymnasium env {env_id!r}{source}: its constructor raised {upstream}"


_PLAIN: dict[type, bool] = {}


def _steps_plainly(cls: type) -> bool:
    """Whether ``cls`` steps as ``GymnasiumEnv`` does (``step_many`` may then step its envs together)."""
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = all(getattr(cls, name) is getattr(GymnasiumEnv, name)
                                  for name in ('step', '_action', '_advance', '_count'))
    return plain


def _numbers(rewards: tuple) -> np.ndarray | None:
    """The envs' rewards as float64 where each is one number (what ``_count`` adds up), else None."""
    try:
        values = np.array(rewards, np.float64)
    except (TypeError, ValueError):
        return None
    return values if values.ndim == 1 else None


def _float32_rows(obs: tuple) -> list[Any]:
    """Each env's observation as ``step`` gives it (float64 arrays as float32): float64 arrays of one shape
    converted in one stack, float32 arrays as they are."""
    first = obs[0]
    if type(first) is np.ndarray and first.dtype == np.float64:
        stacked = np.array(obs)
        if stacked.dtype == np.float64 and stacked.shape[1:] == first.shape:
            return list(stacked.astype(np.float32))
    return [o if type(o) is np.ndarray and o.dtype != np.float64 else GymnasiumEnv._obs(o) for o in obs]


@ENV_REGISTRY.register('gymnasium')
class GymnasiumEnv(EpisodeSeeds, BaseEnv):
    """Wraps ``gymnasium.make(env_id)`` (inside the config's ``wrappers``): observations adapted for the models
    (``ObsAdapter``: vectors as float32, images as CHW uint8), actions in [-1, 1] scaled to Box bounds.

    With ``act_scale`` the env presents a [-1, 1] Box action space (what tanh policies emit). Seeding:
    ``dynamic_seed`` gives every episode a new seed drawn from the env's seeded generator; otherwise every
    episode starts from the same seed (DI-engine's evaluator convention).
    """

    map_gym_era_ids = False  # True (DIEngineEnv): DI-engine's gym-era ids run on their gymnasium versions
    config = dict(
        env_id=None,              # the gymnasium id, e.g. 'Pendulum-v1'
        act_scale=True,           # map actions from [-1, 1] into the Box bounds
        env_kwargs=dict(),        # passed to gymnasium.make
        wrappers=[],              # gymnasium wrappers, innermost first: 'ClipAction', 'pkg.Wrap', dict(type=..., **kw)
        frame_stack=1,            # the last k observations stacked (after wrappers; image frames' channels); 1: none
    )

    def __init__(self, cfg: dict | None = None, env: gym.Env | None = None) -> None:
        """The env of ``cfg.env_id``, or ``env`` (a gymnasium env a user made: wrapped as it is, ``env_id`` and
        ``env_kwargs`` unused)."""
        self._cfg = EasyDict(self.default_config(), **(cfg or {}))
        self._given = env
        if env is None:
            self._gym_id, self._make_kwargs = self.resolve_id(self._cfg)
        else:
            self._gym_id, self._make_kwargs = env.spec.id if env.spec else type(env.unwrapped).__name__, {}
        self._env = self._make()
        space = self._env.action_space
        self._box = isinstance(space, gym.spaces.Box)
        self._scale = bool(self._cfg.act_scale) and self._box
        self._hybrid = HybridActions.of(space)  # a Discrete and a Box: the policy acts in [choice, box...]
        self._action_space = gym.spaces.Box(-1.0, 1.0, space.shape, np.float32) if self._scale else \
            self._hybrid.space if self._hybrid is not None else space
        # what _action needs on every step, read once (the space is a property through gymnasium's wrappers)
        self._act_dtype, self._act_shape = (space.dtype, space.shape) if self._box else (None, None)
        self._scaler = ActionScaler(space) if self._scale else None
        # envs with equal keys share one scaling in step_many
        key = (space.low.tobytes(), space.high.tobytes(), space.dtype) if self._scale else None
        self._action_key = _ACTION_KEYS.setdefault(key, key)  # one object per key: step_many compares by identity
        self._episode_return, self._episode_steps = 0.0, 0
        self._made_with: dict[str, Any] = {}  # the environment parameters given to gymnasium.make
        self._reset_options: dict[str, Any] | None = None  # those given to reset

    def set_parameters(self, values: dict[str, Any], via: str = 'make') -> None:
        """The next episode's environment parameters: ``gymnasium.make`` keywords (made again if changed) or options."""
        if via == 'reset':
            self._reset_options = ReadOptions(values)
        elif values != self._made_with:
            self._env.close()
            self._env = self._make(**values)
            self._made_with = dict(values)

    def _make(self, **kwargs: Any) -> gym.Env:
        """The gymnasium env of this config (``kwargs`` added to ``gymnasium.make``'s) inside the config's wrappers,
        frames stacked if asked, observations adapted for the models (``ObsAdapter``)."""
        if self._given is not None and not kwargs:
            env = self._given
        elif self._given is not None and self._given.spec is None:
            raise ValueError(f"env {self._gym_id} was given as an env without a gymnasium spec: it cannot be made "
                             f"again with {kwargs}; make it so yourself (e.g. render_mode='rgb_array' for videos)")
        else:
            try:  # kwargs win (a video's render_mode)
                env = gym.make(self._given.spec if self._given else self._gym_id, **{**self._make_kwargs, **kwargs})
            except Exception as error:  # the id's package, or its env's constructor: named with the upstream error
                raise ValueError(make_error(self._gym_id, error)) from error
        env = apply_wrappers(env, self._cfg.wrappers)
        if self._cfg.frame_stack > 1:
            env = gym.wrappers.FrameStackObservation(env, int(self._cfg.frame_stack))
        try:
            adapter = ObsAdapter(env.observation_space)
        except ConfigError as error:
            env.close()
            raise ConfigError(f"env {self._gym_id!r}: {error}") from None
        self.obs_adapter = adapter  # what load_policy applies to the observations a user gives
        if adapter.identity:
            return env
        adapter.log_once(self._gym_id)
        return AdaptObservation(env, adapter)

    @classmethod
    def resolve_id(cls, cfg: dict) -> tuple[str, dict]:
        """``(the gymnasium id that runs, make kwargs)`` for an env config (gym-era ids mapped where the type
        does so, with one log line per id)."""
        if not cfg.get('env_id'):
            raise ValueError(f"{cls.__name__} needs env.env_id (a gymnasium id such as 'Pendulum-v1')")
        env_id, kwargs = cfg['env_id'], dict(cfg.get('env_kwargs') or {})
        if cls.map_gym_era_ids and env_id in GYM_ERA_IDS:
            env_id, era_kwargs = GYM_ERA_IDS[env_id]
            kwargs = {**era_kwargs, **kwargs}
            if cfg['env_id'] not in _logged_ids:
                _logged_ids.add(cfg['env_id'])
                logger.warning(f"env_id {cfg['env_id']!r} (gym era) runs as gymnasium's {env_id!r} {kwargs or ''}")
        return env_id, kwargs

    @property
    def unread_options(self) -> list[str]:
        """The reset options (``environment_parameters_via='reset'``) the env has not read since they were set."""
        return [] if self._reset_options is None else self._reset_options.unread()

    def reset(self) -> np.ndarray:
        obs, _ = self._env.reset(seed=self._episode_seed(), options=self._reset_options)
        self._episode_return, self._episode_steps = 0.0, 0
        return self._obs(obs)

    def step(self, action: Any) -> BaseEnvTimestep:
        obs, reward, terminated, truncated, info = self._advance(self._action(action))
        done = bool(terminated or truncated)
        reward = self._train_reward(reward)
        return BaseEnvTimestep(obs, np.float32(reward) if np.ndim(reward) == 0 else np.asarray(reward, np.float32),
                               done, self._info(info, terminated, truncated))

    def _info(self, info: dict, terminated: bool, truncated: bool) -> dict:
        """A step's info as the workers read it: ``TimeLimit.truncated``, and at an episode's end its return in the
        env's own units (a copy: an env may hand out the same dict every step)."""
        info = {**info, 'TimeLimit.truncated': bool(truncated and not terminated)}
        if terminated or truncated:
            info['eval_episode_return'] = self._episode_return
        return info

    def _advance(self, env_action: Any) -> tuple[Any, Any, bool, bool, dict]:
        """gymnasium's step with an action in the env's own space, counted into the episode; float64 obs as
        float32."""
        obs, reward, terminated, truncated, info = self._env.step(env_action)
        self._count(reward)
        if type(obs) is not np.ndarray or obs.dtype == np.float64:  # float32 arrays (the common case) as they are
            obs = self._obs(obs)
        return obs, reward, terminated, truncated, info

    def _count(self, reward: Any) -> None:
        """A step's reward into the episode's return (a vector reward sums per dimension) and its length."""
        self._episode_return = self._episode_return + (float(reward) if isinstance(reward, (float, int)) or
                                                       np.ndim(reward) == 0 else np.asarray(reward, np.float64))
        self._episode_steps += 1

    @classmethod
    def step_many(cls, envs: list[GymnasiumEnv], actions: np.ndarray, all_info: bool = False
                  ) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray, dict[int, dict]] | None:
        """``step`` of ``envs[k]`` with row k of ``actions``, scaling every row at once where the envs share an
        action space: ``(obs, reward (float64 of step's float32), done, terminated, {k: info of an ended
        episode's last step, as ``step`` gives it})``, with ``all_info`` every env's info (the others' as the env
        gave it). None where this type changed how an env steps (each env then steps on its own)."""
        if not _steps_plainly(cls):
            return None
        first = envs[0]
        key = first._action_key
        if first._scale and all(env._action_key is key for env in envs):
            shape = (len(envs),) + first._act_shape
            env_actions = first._scaler(actions.astype(first._act_dtype, copy=False).reshape(shape))
        else:
            env_actions = [env._action(action) for env, action in zip(envs, actions)]
        obs, reward, terminated, truncated, infos = zip(*[env._env.step(a) for env, a in zip(envs, env_actions)])
        rewards = _numbers(reward)
        if rewards is not None:  # _count's common case for every env at once
            for env, value in zip(envs, rewards.tolist()):
                env._episode_return += value
                env._episode_steps += 1
        else:
            for env, value in zip(envs, reward):
                env._count(value)
        obs = _float32_rows(obs)
        if cls._train_reward is not GymnasiumEnv._train_reward:
            rewards = [env._train_reward(r) for env, r in zip(envs, reward)]
        terminated = np.array(terminated, bool)
        done = terminated | np.array(truncated, bool)
        ended_info = dict(enumerate(infos)) if all_info else {}
        for k in true_rows(done):
            ended_info[k] = envs[k]._info(infos[k], terminated[k], truncated[k])
        column = np.array(reward if rewards is None else rewards, np.float32)  # as step's float32 rewards
        return obs, column.astype(np.float64), done, terminated, ended_info

    def _train_reward(self, reward: float) -> float:
        """The reward the learner sees; ``eval_episode_return`` always sums the env's own rewards."""
        return reward

    def _action(self, action: Any) -> Any:
        if self._hybrid is not None:
            return self._hybrid.to_env(to_ndarray(action))
        if self._box:
            if type(action) is not np.ndarray or action.dtype is not self._act_dtype or \
                    action.shape != self._act_shape:
                action = np.asarray(to_ndarray(action), dtype=self._act_dtype).reshape(self._act_shape)
            return self._scaler(action) if self._scale else action
        action = to_ndarray(action)
        if isinstance(self._env.action_space, gym.spaces.Discrete):
            action = np.asarray(action)
            return int(action.reshape(-1)[0]) if action.size == 1 else action
        return np.asarray(action)

    @staticmethod
    def _obs(obs: Any) -> Any:
        if isinstance(obs, dict):
            return {k: GymnasiumEnv._obs(v) for k, v in obs.items()}
        obs = np.asarray(obs)
        return obs.astype(np.float32) if obs.dtype == np.float64 else obs

    def close(self) -> None:
        if getattr(self._env, 'recording', False) and self._episode_steps == 0:
            self._env.recording = False  # an episode only just reset (an auto-reset at the end): no video of it
        self._env.close()

    def enable_save_replay(self, replay_path: str) -> None:
        """Record every episode from now on as an mp4 in ``replay_path`` (DI-engine's name) under gymnasium's
        ``RecordVideo``, which needs moviepy (the ``video`` extra). An env already rendering to frames
        (``env_kwargs.render_mode='rgb_array'``, as render-observation wrappers need) is recorded as it is; any other
        is made again with that render mode in place of its own."""
        os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')  # frames off screen: no display (nor XDG_RUNTIME_DIR)
        os.environ.setdefault('SDL_AUDIODRIVER', 'dummy')
        rendering = self._env.render_mode == 'rgb_array'
        env = self._env if rendering else self._make(render_mode='rgb_array')
        try:
            recorder = gym.wrappers.RecordVideo(env, video_folder=replay_path, episode_trigger=lambda _: True,
                                                disable_logger=True)
        except gym.error.DependencyNotInstalled as error:
            if not rendering:
                env.close()
            raise ImportError(f"recording videos of {self._gym_id!r} needs {error.args[0].split(' is not')[0]}: "
                              f"pip install 'ding-lite[video]' (gymnasium says: {error})") from None
        if not rendering:
            self._env.close()
        self._env = recorder

    @property
    def observation_space(self) -> gym.Space:
        return self._env.observation_space

    @property
    def action_space(self) -> gym.Space:
        return self._action_space

    @property
    def reward_space(self) -> gym.Space:
        return gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    @property
    def env_id(self) -> str:
        """The gymnasium id that runs (after any gym-era mapping)."""
        return self._gym_id

    @property
    def action_scaler(self) -> ActionScaler | HybridActions | None:
        """How [-1, 1] actions (a batch) become the env's own (a hybrid env's: a list of its Tuples or Dicts; None:
        the env takes the policy's actions as they are)."""
        return self._hybrid if self._hybrid is not None else self._scaler

    def __repr__(self) -> str:
        return f"GymnasiumEnv({self._cfg.env_id!r})"
