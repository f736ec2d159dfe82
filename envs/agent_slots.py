"""Many agents as many envs: each (env, possible agent) of a multi-agent env is an env slot of its own, so collectors,
evaluators, memories and trajectories work per agent unchanged (ML-Agents' per-agent trajectories).

A slot is ready while its agent is live; an agent that ends ends its slot's episode (the others go on); one that
joins becomes ready with its first observation (no action and no experience until its next step). Each env steps
once with the actions of all its live agents, and never gets one for an agent that is not live. When an env's
episode ends (no agent left), the slot whose agent ended last carries ``info['team']``: the team's return and
length and each agent's (``return_<agent>``, ``length_<agent>``), which collectors and evaluators count as the
episode.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ding_lite.worker.episode_metrics import agent_returns
from ding_lite.worker.manager_protocol import Offers, TeamRecords

from .base_env import BaseEnv, BaseEnvBatchTimestep, BaseEnvTimestep
from .env_manager import BaseEnvManager
from .timestep_columns import batch_of_timesteps, check_ready


class AgentSlots:
    """The slots of ``manager``'s multi-agent envs (``PettingZooEnv``): slot ``e * A + a`` is agent ``a`` of env
    ``e``, with the interface of an env manager."""

    asynchronous = False

    def __init__(self, manager: BaseEnvManager) -> None:
        self.manager = manager
        self.agents: list[str] = list(manager.env_ref.agents)
        self.team_envs = manager.env_num
        self.env_num = manager.env_num * len(self.agents)

    def offers(self) -> Offers:
        """Its manager's, its episodes counted per team (``TeamRecords``: an agent's ends with its team's)."""
        return replace(self.manager.offers(), episodes=TeamRecords(self), asynchronous=False)

    def env_of(self, slot: int) -> int:
        """The env whose agent ``slot`` is."""
        return slot // len(self.agents)

    @property
    def info_metrics(self) -> list[str]:
        return self.manager.info_metrics

    @info_metrics.setter
    def info_metrics(self, keys: list[str]) -> None:
        self.manager.info_metrics = keys

    @property
    def info_stats(self) -> Any:
        return self.manager.info_stats

    @info_stats.setter
    def info_stats(self, stats: Any) -> None:
        self.manager.info_stats = stats

    @property
    def parameters(self) -> Any:
        return self.manager.parameters

    @parameters.setter
    def parameters(self, parameters: Any) -> None:
        self.manager.parameters = parameters

    def launch(self, reset_param: dict | None = None) -> None:
        self.manager.launch(reset_param)

    def seed(self, seed: int | list[int], dynamic_seed: bool = True) -> None:
        """Env ``e`` (all of its agents) gets ``seed + e``, as ``BaseEnvManager.seed``."""
        self.manager.seed(seed, dynamic_seed)

    def reset(self, reset_param: dict | None = None) -> None:
        self.manager.reset(reset_param)

    @property
    def ready_obs(self) -> dict[int, Any]:
        """``{slot: obs}`` of the live agents of the ready envs (with action masks: ``{'obs', 'action_mask'}``)."""
        n = len(self.agents)
        return {e * n + a: agent_obs(view, a) for e, view in self.manager.ready_obs.items()
                for a in np.flatnonzero(view['live']).tolist()}

    def ready_obs_batch(self) -> tuple[list[int], np.ndarray] | None:
        """The ready slots and their observations stacked; None with action masks (dict observations)."""
        ready = self.ready_obs
        first = next(iter(ready.values()), None)
        return None if isinstance(first, dict) else (list(ready), np.array(list(ready.values())))

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        """Step each env of the given slots once with its live agents' actions; a timestep per given slot."""
        n, ready = len(self.agents), self.manager.ready_obs
        live = {e: np.flatnonzero(view['live']).tolist() for e, view in ready.items()}
        check_ready({e * n + a for e, agents in live.items() for a in agents}, actions)
        joint: dict[int, np.ndarray] = {}
        for slot, action in actions.items():
            e = self.env_of(slot)
            if e not in joint:
                joint[e] = np.zeros((n,) + np.shape(action), np.asarray(action).dtype)
            joint[e][slot % n] = action
        for e in joint:
            left = [self.agents[a] for a in live[e] if e * n + a not in actions]
            if left:
                raise ValueError(f"env {e}'s live agents {left} got no action: the slots of an env's live agents "
                                 f"step together")
        timesteps = self.manager.step(joint)
        out = {}
        for e, timestep in timesteps.items():
            out.update(self._slot_steps(e, timestep, live[e]))
        return out

    def step_batch(self, env_ids: list[int], actions: np.ndarray) -> BaseEnvBatchTimestep:
        return batch_of_timesteps(self, env_ids, self.step(dict(zip(env_ids, actions))))

    def _slot_steps(self, e: int, timestep: BaseEnvTimestep, acting: list[int]) -> dict[int, BaseEnvTimestep]:
        """Env ``e``'s step as a timestep for each agent that acted in it (``acting``: the agents given actions)."""
        n, info = len(self.agents), timestep.info
        if info.get('abnormal'):  # the env restarted: the acting agents' episodes broke off
            return {e * n + a: BaseEnvTimestep(timestep.obs, 0.0, True, info) for a in acting}
        acted, terminated, truncated = info['acted'], info['terminated'], info['truncated']
        ended = terminated | truncated
        last = int(np.flatnonzero(acted)[-1]) if timestep.done else -1
        out = {}
        for a in np.flatnonzero(acted).tolist():
            agent_info = dict(info['agent_info'].get(self.agents[a]) or {})
            if ended[a]:
                agent_info.update({'TimeLimit.truncated': bool(truncated[a] and not terminated[a]),
                                   'eval_episode_return': float(info['returns'][a])})
            if a == last:
                agent_info['team'] = self._team(info)
            out[e * n + a] = BaseEnvTimestep(agent_obs(timestep.obs, a), np.float32(timestep.reward[a]),
                                             bool(ended[a]), agent_info)
        return out

    def _team(self, info: dict) -> dict[str, float]:
        """The ended episode's team return (the sum over agents) and length (env steps), and each agent's."""
        team = {'return': float(info['eval_episode_return']), 'length': int(info['lengths'].max()),
                **agent_returns(dict(zip(self.agents, info['returns'].tolist())))}
        for a, agent in enumerate(self.agents):
            team[f'length_{agent}'] = int(info['lengths'][a])
        return team

    @property
    def done(self) -> bool:
        return self.manager.done

    def close(self) -> None:
        self.manager.close()

    def enable_save_replay(self, replay_path: str | list[str]) -> None:
        self.manager.enable_save_replay(replay_path)

    def state_dict(self) -> dict[str, Any]:
        return self.manager.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.manager.load_state_dict(state)

    @property
    def observation_space(self) -> Any:
        return self.manager.observation_space

    @property
    def action_space(self) -> Any:
        return self.manager.action_space

    @property
    def reward_space(self) -> Any:
        return self.manager.reward_space

    @property
    def env_ref(self) -> BaseEnv:
        return self.manager.env_ref


def agent_obs(view: dict[str, np.ndarray], a: int) -> Any:
    """Agent ``a``'s observation in a multi-agent env's rows: its row, or ``{'obs', 'action_mask'}`` with masks."""
    if 'action_mask' in view:
        return {'obs': view['obs'][a], 'action_mask': view['action_mask'][a]}
    return view['obs'][a]


class FirstAgent:
    """One agent's view of a multi-agent env, for a probe's single step: the first live agent's observation, every
    live agent acting with the action given (with action masks, the others with their first allowed one)."""

    def __init__(self, env: BaseEnv) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def reset(self) -> Any:
        self._view = self.env.reset()
        self._agent = int(np.flatnonzero(self._view['live'])[0])
        return agent_obs(self._view, self._agent)

    def step(self, action: Any) -> BaseEnvTimestep:
        joint = np.stack([np.asarray(action)] * len(self.env.agents))
        if 'action_mask' in self._view:  # the others take their first allowed action
            for b, mask in enumerate(self._view['action_mask']):
                joint[b] = action if b == self._agent else int(np.argmax(mask))
        timestep = self.env.step(joint)
        return BaseEnvTimestep(agent_obs(timestep.obs, self._agent), np.float32(timestep.reward[self._agent]),
                               timestep.done, timestep.info)


__all__ = ['AgentSlots', 'FirstAgent']
