"""DI-engine's ``petting_zoo`` env type: MPE's simple_spread with a fixed agent axis and DI-engine's observation dict,
for its MASAC configs (``policy.multi_agent=True``), on today's ``mpe2`` package."""
from __future__ import annotations

import logging
from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.registry import ENV_REGISTRY
from ding_lite.utils.default_config import ConfigError
from ding_lite.worker.episode_metrics import agent_returns
from .base_env import BaseEnv, BaseEnvTimestep, EpisodeSeeds
from .gymnasium_env import ActionScaler

logger = logging.getLogger(__name__)
_IDS = {'simple_spread_v2': 'simple_spread_v3', 'simple_spread_v3': 'simple_spread_v3'}  # pettingzoo.mpe -> mpe2
_said: set[str] = set()


def _box(*shape: int) -> gym.spaces.Box:
    return gym.spaces.Box(-np.inf, np.inf, shape, np.float32)


@ENV_REGISTRY.register('pettingzoo_team')
class MPESpreadEnv(EpisodeSeeds, BaseEnv):
    """simple_spread as DI-engine's ``petting_zoo`` env gives it: observations ``{'agent_state' [A, N0] (each agent's
    own), 'global_state' [N1] (every agent's velocity and position, the landmarks, the communication; ``[A, N0 + N1]``
    with ``agent_specific_global_state``: each agent's own view before it), 'agent_alone_state',
    'agent_alone_padding_state', 'action_mask' [A, n]}`` (``agent_obs_only``: ``agent_state`` alone), actions a row
    per agent, one team reward per step: the sum over agents of each agent's global plus local reward (DI-engine's
    own rule, twice mpe2's ``local_ratio=0.5`` mix). An episode ends when every agent is done or after
    ``max_cycles`` steps (a time limit: it bootstraps). Seeded per episode as every ding_lite env (DI-engine reset
    each episode with the same seed)."""

    agent_axis = True  # observations and actions have a row per agent: for MASAC (policy.multi_agent=True)
    config = dict(
        env_family='mpe',                    # DI-engine's key: PettingZoo's family (MPE only)
        env_id='simple_spread_v2',           # simple_spread (DI-engine's v2 runs as mpe2's simple_spread_v3)
        n_agent=3,                           # agents (N)
        n_landmark=3,                        # landmarks: simple_spread has one per agent
        max_cycles=25,                       # env steps per episode
        max_step=None,                       # DI-engine's older name of max_cycles
        agent_obs_only=False,                # observations: agent_state [A, N0] alone, not DI-engine's dict
        continuous_actions=False,            # Box(5) per agent instead of Discrete(5)
        act_scale=True,                      # continuous actions in [-1, 1] scaled to mpe2's [0, 1]
        agent_specific_global_state=False,   # global_state per agent: [A, N0 + N1], each agent's view first
    )

    def __init__(self, cfg: dict | None = None) -> None:
        self._cfg = EasyDict(self.default_config(), **(cfg or {}))
        cfg = self._cfg
        if cfg.env_family != 'mpe' or cfg.env_id not in _IDS:
            raise ConfigError(f"env.type='pettingzoo_team' runs MPE's simple_spread (as DI-engine's does), got "
                              f"env_family={cfg.env_family!r}, env_id={cfg.env_id!r}; any other PettingZoo env runs as "
                              f"env.type='pettingzoo_agents' with env_id its module")
        if cfg.n_landmark != cfg.n_agent:
            raise ConfigError(f"env.n_landmark={cfg.n_landmark}: simple_spread has one landmark per agent "
                              f"(n_agent={cfg.n_agent})")
        self.env_id = _IDS[cfg.env_id]
        if cfg.env_id != self.env_id and cfg.env_id not in _said:
            _said.add(cfg.env_id)
            logger.warning(f"env_id {cfg.env_id!r} (pettingzoo.mpe) runs as mpe2's {self.env_id!r}")
        from mpe2 import simple_spread_v3
        self._cycles = int(cfg.max_step or cfg.max_cycles)
        self._env = simple_spread_v3.parallel_env(N=cfg.n_agent, local_ratio=0.5, max_cycles=self._cycles,
                                                  continuous_actions=cfg.continuous_actions)
        self.agents = list(self._env.possible_agents)
        space = self._env.action_space(self.agents[0])
        self._scaler = ActionScaler(space) if cfg.continuous_actions and cfg.act_scale else None
        self._action_space = gym.spaces.Box(-1.0, 1.0, space.shape, np.float32) if self._scaler else space
        self._n_actions = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(space.shape[0])
        self._observation_space = self._spaces(int(self._env.observation_space(self.agents[0]).shape[0]))
        self._steps, self._agent_returns = 0, np.zeros(len(self.agents))

    def _spaces(self, n0: int) -> gym.Space:
        a, landmarks = len(self.agents), int(self._cfg.n_landmark)
        if self._cfg.agent_obs_only:
            return _box(a, n0)
        n1 = 4 * a + 2 * landmarks + 2 * a * (a - 1)
        alone = 4 + 2 * landmarks + 2 * (a - 1)
        glob = _box(a, n0 + n1) if self._cfg.agent_specific_global_state else _box(n1)
        return gym.spaces.Dict({'agent_state': _box(a, n0), 'global_state': glob, 'agent_alone_state': _box(a, alone),
                                'agent_alone_padding_state': _box(a, n0), 'action_mask': _box(a, self._n_actions)})

    def _obs(self, observations: dict[str, Any]) -> Any:
        """DI-engine's dict from the agents' observations ``[self vel, self pos, landmarks, other agents, comm]``."""
        own = np.stack([np.asarray(observations[agent], np.float32) for agent in self.agents])
        if self._cfg.agent_obs_only:
            return own
        comm = 2 * (len(self.agents) - 1)
        landmarks_end = 4 + 2 * int(self._cfg.n_landmark)
        glob = np.concatenate([own[0, 2:-comm], own[:, :2].reshape(-1), own[:, -comm:].reshape(-1)])
        if self._cfg.agent_specific_global_state:
            glob = np.concatenate([own, np.broadcast_to(glob, (len(self.agents), glob.size))], axis=1)
        alone = np.concatenate([own[:, :landmarks_end], own[:, -comm:]], axis=1)
        padded = own.copy()
        padded[:, landmarks_end:-comm] = 0.0
        return {'agent_state': own, 'global_state': glob, 'agent_alone_state': alone,
                'agent_alone_padding_state': padded,
                'action_mask': np.ones((len(self.agents), self._n_actions), np.float32)}

    def reset(self) -> Any:
        observations, _ = self._env.reset(seed=self._episode_seed())
        self._steps, self._agent_returns = 0, np.zeros(len(self.agents))
        return self._obs(observations)

    def step(self, action: Any) -> BaseEnvTimestep:
        action = np.asarray(action)
        if self._scaler is not None:
            actions = {agent: self._scaler(row.astype(np.float32)) for agent, row in zip(self.agents, action)}
        elif isinstance(self._action_space, gym.spaces.Discrete):
            actions = {agent: int(a) for agent, a in zip(self.agents, action.reshape(len(self.agents), -1)[:, 0])}
        else:
            actions = dict(zip(self.agents, action.astype(np.float32)))
        observations, rewards, terminations, truncations, infos = self._env.step(actions)
        self._steps += 1
        agent_rewards = np.array([2.0 * float(rewards[agent]) for agent in self.agents])  # global + local each
        reward = float(agent_rewards.sum())
        self._agent_returns += agent_rewards
        terminated = all(terminations.values())
        done = terminated or self._steps >= self._cycles or not self._env.agents
        info = {'agent_info': infos}
        if done:
            returns = dict(zip(self.agents, self._agent_returns.tolist()))
            info.update({'TimeLimit.truncated': not terminated, 'eval_episode_return': sum(returns.values()),
                         'agent_metrics': {**agent_returns(returns),
                                           **{f'length_{a}': self._steps for a in self.agents}}})
        return BaseEnvTimestep(self._obs(observations), np.array([reward], np.float32), done, info)

    def close(self) -> None:
        self._env.close()

    @property
    def observation_space(self) -> gym.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.Space:
        """One agent's action (the env takes a row per agent)."""
        return self._action_space

    @property
    def joint_action_space(self) -> gym.Space:
        """The actions of all agents, a row each (what ``step`` takes; random warm-up actions come from it)."""
        space, n = self._action_space, len(self.agents)
        if isinstance(space, gym.spaces.Discrete):
            return gym.spaces.MultiDiscrete([space.n] * n)
        return gym.spaces.Box(np.broadcast_to(space.low, (n, *space.shape)),
                              np.broadcast_to(space.high, (n, *space.shape)), (n, *space.shape), space.dtype)

    @property
    def reward_space(self) -> gym.Space:
        return _box(1)

    def __repr__(self) -> str:
        return f"MPESpreadEnv({self.env_id}, n_agent={len(self.agents)})"


ENV_REGISTRY.register('petting_zoo', MPESpreadEnv)  # DI-engine's name (its configs run unchanged)

__all__ = ['MPESpreadEnv']
