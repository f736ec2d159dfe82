"""PettingZoo's parallel API as one env whose agents are rows: ``AgentSlots`` turns each row into an env slot."""
from __future__ import annotations

import importlib
import logging
import pkgutil
import sys
from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.registry import ENV_REGISTRY, did_you_mean, import_names
from ding_lite.utils.default_config import ConfigError
from .adapt import ObsAdapter, apply_wrappers
from .base_env import BaseEnv, BaseEnvTimestep, EpisodeSeeds
from .gymnasium_env import ActionScaler

logger = logging.getLogger(__name__)


def make_parallel_env(env_id: str, kwargs: dict) -> Any:
    """``parallel_env(**kwargs)`` of the module ``env_id`` (imported as ``import_names`` imports modules); an AEC
    module (``env()`` only) through PettingZoo's ``aec_to_parallel``."""
    if not env_id:
        raise ConfigError("env.type='pettingzoo_agents' needs env.env_id: a module with parallel_env(**kwargs), e.g. "
                          "'mpe2.simple_spread_v3'")
    try:
        import_names([env_id])  # (as import_names finds modules: sys.path, then the current folder)
    except ImportError:
        raise ConfigError(f"env.env_id={env_id!r}: no module of that name;{_module_hint(env_id)} a PettingZoo env is "
                          f"named by its module, e.g. 'mpe2.simple_spread_v3'") from None
    module = sys.modules[env_id]
    api = 'parallel_env' if hasattr(module, 'parallel_env') else 'env'
    make = getattr(module, api, None)
    if make is None:
        raise ConfigError(f"env.env_id={env_id!r}: the module has neither parallel_env(**kwargs) (PettingZoo's "
                          f"parallel API) nor env(**kwargs) (its AEC API)")
    try:
        env = make(**kwargs)
    except TypeError as error:  # a keyword it does not take: named with the env
        raise ConfigError(f"env.env_kwargs={kwargs!r}: env {env_id!r} refused them ({error}); give the keywords its "
                          f"{api}() takes") from None
    if api == 'env':
        from pettingzoo.utils.conversions import aec_to_parallel
        env = aec_to_parallel(env)
    return env


def _module_hint(env_id: str) -> str:
    """`` did you mean '<package>.<closest>'?`` among the modules of ``env_id``'s package (nothing where there is no
    such package)."""
    package, _, name = env_id.rpartition('.')
    try:
        path = getattr(importlib.import_module(package), '__path__', None) if package else None
    except ImportError:
        return ''
    return did_you_mean(name, [found.name for found in pkgutil.iter_modules(path)], f'{package}.') if path else ''


class AgentCodec:
    """How each agent's observation becomes a row of the shared model's input (adapted as a gymnasium env's,
    zero-padded to the longest, the agent's one-hot index after it with ``agent_id_input``) and how a row of the
    model's actions becomes that agent's action (scaled from [-1, 1] into its Box where ``act_scale``)."""

    def __init__(self, env_id: str, agents: list[str], obs_spaces: list[gym.Space], action_spaces: list[gym.Space],
                 agent_id_input: bool, act_scale: bool) -> None:
        self.env_id, self.agents, self.agent_id_input = env_id, agents, agent_id_input
        self.index = {agent: a for a, agent in enumerate(agents)}
        # PettingZoo's masked observations: {'observation': ..., 'action_mask': ...}
        self.masked = all(isinstance(s, gym.spaces.Dict) and set(s.spaces) == {'observation', 'action_mask'}
                          for s in obs_spaces)
        self._adapters = [ObsAdapter(s['observation'] if self.masked else s) for s in obs_spaces]
        self.obs_size, self.observation_space = self._obs_layout()
        self.action_space, self._scalers = self._action_layout(action_spaces, act_scale)
        if self.masked:
            if not isinstance(self.action_space, gym.spaces.Discrete):
                raise ConfigError(f"env {env_id}: action masks need Discrete actions, got {self.action_space}")
            mask = gym.spaces.Box(0, 1, (int(self.action_space.n),), np.float32)
            self.observation_space = gym.spaces.Dict({'obs': self.observation_space, 'action_mask': mask})

    def mask_row(self, obs: Any) -> np.ndarray | None:
        """An agent's action mask (1: allowed) from its observation, or None without masks."""
        return np.asarray(obs['action_mask'], np.float32) if self.masked else None

    def _obs_layout(self) -> tuple[int, gym.spaces.Box]:
        spaces = {agent: adapter.space for agent, adapter in zip(self.agents, self._adapters)}
        images = {agent: s.shape for agent, s in spaces.items() if isinstance(s, gym.spaces.Box) and len(s.shape) > 1}
        if images:
            raise ConfigError(f"env {self.env_id}: the agents' observations are images ({images}) and the agents' "
                              f"shared model takes vectors; shrink and flatten them in env.wrappers, e.g. SuperSuit's "
                              f"(pip install supersuit): wrappers=[dict(type='color_reduction_v0', mode='full'), "
                              f"dict(type='resize_v1', x_size=16, y_size=16), 'flatten_v0'], or a function of your own "
                              f"that takes the parallel env and returns one")
        if any(not isinstance(s, gym.spaces.Box) or len(s.shape) != 1 for s in spaces.values()):
            raise ConfigError(f"env {self.env_id}: the agents' observations must adapt to vectors (1-D Boxes) to "
                              f"share one model, got {spaces}")
        sizes = {int(s.shape[0]) for s in spaces.values()}
        size = max(sizes) + (len(self.agents) if self.agent_id_input else 0)
        if len(sizes) > 1:
            logger.info(f"env {self.env_id}: the agents' observations ({sorted(sizes)} numbers) are zero-padded to "
                        f"{max(sizes)}, as SuperSuit's pad_observations does")
        return size, gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def _action_layout(self, spaces: list[gym.Space], act_scale: bool) -> tuple[gym.Space, list[Any]]:
        first = spaces[0]
        same = all(type(s) is type(first) and s.shape == first.shape and
                   (not isinstance(s, gym.spaces.Discrete) or s.n == first.n) for s in spaces)
        if not same or not isinstance(first, (gym.spaces.Box, gym.spaces.Discrete)):
            raise ConfigError(f"env {self.env_id}: the agents share one policy, so their action spaces must be one "
                              f"Box shape or one Discrete size, got {dict(zip(self.agents, spaces))}")
        if isinstance(first, gym.spaces.Box) and act_scale:
            return gym.spaces.Box(-1.0, 1.0, first.shape, np.float32), [ActionScaler(s) for s in spaces]
        return first, [None] * len(spaces)

    def obs_row(self, a: int, obs: Any, out: np.ndarray) -> None:
        """Agent ``a``'s observation written into ``out`` (its row)."""
        row = np.asarray(self._adapters[a](obs['observation'] if self.masked else obs), np.float32).reshape(-1)
        out[:row.size], out[row.size:] = row, 0.0
        if self.agent_id_input:
            out[len(out) - len(self.agents) + a] = 1.0

    def rows(self, observations: dict[str, Any]) -> np.ndarray | dict[str, np.ndarray]:
        """The model's input rows for ``{agent: observation}``, in the dict's order (with masks: ``{'obs',
        'action_mask'}`` of rows)."""
        unknown = [agent for agent in observations if agent not in self.index]
        if unknown:
            raise ValueError(f"env {self.env_id} has no agents {unknown}; its agents are {self.agents}")
        out = np.zeros((len(observations), self.obs_size), np.float32)
        for row, (agent, obs) in zip(out, observations.items()):
            self.obs_row(self.index[agent], obs, row)
        if not self.masked:
            return out
        return {'obs': out, 'action_mask': np.stack([self.mask_row(obs) for obs in observations.values()])}

    def action(self, a: int, action: np.ndarray) -> Any:
        """Agent ``a``'s action in its env's units from the model's row."""
        scaler = self._scalers[a]
        if scaler is not None:
            return scaler(np.asarray(action, self.action_space.dtype))
        if isinstance(self.action_space, gym.spaces.Discrete):
            return int(np.asarray(action).reshape(-1)[0])
        return np.asarray(action)


@ENV_REGISTRY.register('pettingzoo_agents')
class PettingZooEnv(EpisodeSeeds, BaseEnv):
    """A PettingZoo parallel env (``env_id`` a module with ``parallel_env``; AEC modules converted) with its possible
    agents as rows: ``reset`` gives ``{'obs': [A, D], 'live': [A]}`` (and ``'action_mask' [A, n]`` where the agents'
    observations are PettingZoo's ``{'observation', 'action_mask'}``), ``step`` takes an action row per agent and acts
    only for the live ones (the others' rows are ignored), its reward a row per agent. An episode ends when no agent
    is live. Every agent's observation is adapted as a gymnasium env's (``ObsAdapter``) and vectors of different
    sizes are zero-padded to the longest; actions in [-1, 1] are scaled to each agent's Box.

    ``info`` of a step: ``acted``/``terminated``/``truncated`` ``[A]``, ``agent_info`` (each agent's own), ``returns``
    and ``lengths`` ``[A]`` of the episode so far; at the episode's end ``eval_episode_return`` (the team's: the sum
    over agents, DI-engine's).
    """

    agent_slots = True  # the env managers hand its rows out as env slots (envs/agent_slots.py)
    config = dict(
        env_id=None,              # a module with parallel_env(**kwargs), e.g. 'mpe2.simple_spread_v3'
        env_kwargs=dict(),        # passed to parallel_env
        wrappers=[],              # functions of the parallel env, innermost first: SuperSuit's ('resize_v1',
                                  # dict(type='resize_v1', x_size=16, y_size=16), 'flatten_v0') or 'pkg.my_wrapper'
        act_scale=True,           # map Box actions from [-1, 1] into each agent's bounds
        agent_id_input=False,     # each agent's index one-hot after its observation (set from model.agent_id_input)
    )

    def __init__(self, cfg: dict | None = None) -> None:
        self._cfg = EasyDict(self.default_config(), **(cfg or {}))
        self._env = apply_wrappers(make_parallel_env(self._cfg.env_id, dict(self._cfg.env_kwargs or {})),
                                   self._cfg.wrappers, home='supersuit')
        self.agents: list[str] = list(self._env.possible_agents)
        self.codec = AgentCodec(self.env_id, self.agents, [self._env.observation_space(a) for a in self.agents],
                                [self._env.action_space(a) for a in self.agents], bool(self._cfg.agent_id_input),
                                bool(self._cfg.act_scale))
        self._live, self._gone = np.zeros(len(self.agents), bool), set()
        self._obs = np.zeros((len(self.agents), self.codec.obs_size), np.float32)
        self._mask = np.ones((len(self.agents), int(self.codec.action_space.n)), np.float32) \
            if self.codec.masked else None
        self._returns, self._lengths = np.zeros(len(self.agents)), np.zeros(len(self.agents), np.int64)

    @property
    def env_id(self) -> str:
        return str(self._cfg.env_id)

    def reset(self) -> dict[str, np.ndarray]:
        observations, _ = self._env.reset(seed=self._episode_seed())
        self._returns[:], self._lengths[:] = 0.0, 0
        self._live[:] = False
        self._gone = set()
        self._take(observations, self._live_now(set()))
        return self._view()

    def _live_now(self, ended: set[str]) -> np.ndarray:
        """The agents live from now: listed in the env's ``agents`` and not ended (an env that keeps an ended agent
        listed has it back only once it left the list and came again)."""
        listed = set(self._env.agents)
        self._gone = (self._gone | ended) & listed
        live = np.zeros(len(self.agents), bool)
        for agent in listed - self._gone:
            live[self.codec.index[agent]] = True
        return live

    def _take(self, observations: dict[str, Any], live: np.ndarray) -> None:
        """Keep each agent's new observation (an agent that got none keeps its last one); ``live`` from now."""
        joined = live & ~self._live
        for agent, obs in observations.items():
            a = self.codec.index[agent]
            self.codec.obs_row(a, obs, self._obs[a])
            if self._mask is not None:
                self._mask[a] = self.codec.mask_row(obs)
        missing = [self.agents[a] for a in np.flatnonzero(joined) if self.agents[a] not in observations]
        if missing:
            raise ValueError(f"env {self.env_id}: agents {missing} became live without an observation")
        self._live = live

    def _view(self) -> dict[str, np.ndarray]:
        view = {'obs': self._obs.copy(), 'live': self._live.copy()}
        if self._mask is not None:
            view['action_mask'] = self._mask.copy()
        return view

    def step(self, action: Any) -> BaseEnvTimestep:
        action = np.asarray(action)
        acted = self._live.copy()
        actions = {self.agents[a]: self.codec.action(a, action[a]) for a in np.flatnonzero(acted)}
        observations, rewards, terminations, truncations, infos = self._env.step(actions)
        n = len(self.agents)
        reward, terminated, truncated = np.zeros(n), np.zeros(n, bool), np.zeros(n, bool)
        for agent, value in rewards.items():
            reward[self.codec.index[agent]] = float(value)
        for flags, given in ((terminated, terminations), (truncated, truncations)):
            for agent, flag in given.items():
                flags[self.codec.index[agent]] = bool(flag)
        ended = {self.agents[a] for a in np.flatnonzero(acted & (terminated | truncated))}
        self._take(observations, self._live_now(ended))
        truncated |= acted & ~terminated & ~self._live  # an agent gone without a word: cut off, not terminated
        self._returns += np.where(acted, reward, 0.0)
        self._lengths += acted
        done = not self._live.any()
        info = {'acted': acted, 'terminated': terminated & acted, 'truncated': truncated & acted,
                'agent_info': {agent: infos.get(agent, {}) for agent in actions},
                'returns': self._returns.copy(), 'lengths': self._lengths.copy()}
        if done:
            info['eval_episode_return'] = float(self._returns.sum())
        return BaseEnvTimestep(self._view(), reward, done, info)

    def close(self) -> None:
        self._env.close()

    @property
    def observation_space(self) -> gym.Space:
        """One agent's observation (every agent's is this shape)."""
        return self.codec.observation_space

    @property
    def action_space(self) -> gym.Space:
        """One agent's action (shared by all agents)."""
        return self.codec.action_space

    @property
    def reward_space(self) -> gym.Space:
        return gym.spaces.Box(-np.inf, np.inf, (), np.float32)

    def __repr__(self) -> str:
        return f"PettingZooEnv({self.env_id}, agents={self.agents})"


ENV_REGISTRY.register('pettingzoo', PettingZooEnv)  # its earlier name, kept

__all__ = ['AgentCodec', 'PettingZooEnv', 'make_parallel_env']
