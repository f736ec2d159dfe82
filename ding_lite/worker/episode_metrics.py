"""What an env reports in ``info`` at an episode's end, kept per episode and averaged for the logs."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..config_checks import info_stats_spec
from ..data.collate import to_reward

SUCCESS_KEY = 'is_success'                  # gymnasium-robotics' and SB3's key, kept whenever an env reports it
SUCCESS_ALIASES = ('success',)              # the same meaning under another key (gymnasium-robotics' PointMaze)
LOGGED_AS = {SUCCESS_KEY: 'success_rate'}   # SB3's name for its average


def episode_metrics(info: dict[str, Any] | None, keys: Iterable[str]) -> dict[str, float]:
    """The numeric values of ``keys`` (and ``is_success``, or its alias ``success``) in an episode's last ``info``,
    and of its ``agent_metrics`` (a multi-agent env's per-agent returns and lengths); others are skipped."""
    info = info or {}
    keys = [*keys, *info.get('agent_metrics', {})]
    info = {**info, **info.get('agent_metrics', {})}
    alias = next((key for key in SUCCESS_ALIASES if key in info), None)
    if SUCCESS_KEY not in info and alias is not None:
        info = {**info, SUCCESS_KEY: info[alias]}
    metrics = {}
    for key in dict.fromkeys([*keys, SUCCESS_KEY]):
        value = as_number(info.get(key))
        if value is not None:
            metrics[key] = value
    return metrics


def team_of(agent: str) -> str:
    """An agent's team as PettingZoo names agents: its id less a trailing ``_<index>`` (``adversary_0``: ``adversary``)."""
    head, _, index = agent.rpartition('_')
    return head if head and index.isdigit() else agent


def agent_returns(returns: dict[str, float]) -> dict[str, float]:
    """An episode's per-agent returns as the logs name them, ``return_<agent>``, and where the agents form two teams or
    more (``team_of``: simple_adversary's, simple_tag's), each team's sum, ``return_team_<team>``."""
    out = {f'return_{agent}': float(value) for agent, value in returns.items()}
    teams: dict[str, float] = {}
    for agent, value in returns.items():
        teams[team_of(agent)] = teams.get(team_of(agent), 0.0) + float(value)
    return out | ({f'return_team_{team}': value for team, value in teams.items()} if len(teams) > 1 else {})


def stop_key(stop_on: str | None, agents: list[str]) -> str:
    """The ``evaluator.csv`` column a run stops on: ``return_mean`` (``stop_on`` None), an agent's return or a team's
    (``agent_returns``); a ``ValueError`` naming the agents and teams where ``stop_on`` is neither."""
    if stop_on is None:
        return 'return_mean'
    teams = sorted({team_of(agent) for agent in agents})
    if stop_on in agents:
        return f'return_{stop_on}'
    if stop_on in teams and len(teams) > 1:
        return f'return_team_{stop_on}'
    raise ValueError(f"evaluator.stop_on={stop_on!r} names no agent or team of the env: its agents are {agents}"
                     + (f", its teams {teams}" if len(teams) > 1 else ' (one team)') +
                     "; None stops on the episode's return (the agents' sum)")


def as_number(value: Any) -> float | None:
    """``value`` as a float where it is one number (a Python or numpy scalar, or a one-element array), else None."""
    if isinstance(value, (bool, int, float, np.bool_, np.number)) or \
            (isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in 'biuf'):
        return float(np.asarray(value).reshape(()))
    return None


def pop_env_stats(manager: Any) -> dict[str, float]:
    """An env manager's ``env.info_stats`` aggregated since the last call (nothing without them)."""
    stats = getattr(manager, 'info_stats', None)
    return stats.pop() if stats is not None else {}


class InfoStats:
    """ML-Agents' environment stats: numeric values an env reports in ``info`` at any step, each key aggregated over
    a log period as ``env.info_stats`` says: ``'average'`` (the mean of its values), ``'sum'`` or ``'most_recent'``
    (the last value reported)."""

    def __init__(self, spec: dict[str, str]) -> None:
        self.spec = info_stats_spec(spec)
        self._total: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def record(self, info: dict[str, Any]) -> None:
        """Add the values of one env step's ``info``, and of each agent's (a multi-agent env's ``info['agent_info']``:
        every agent's value counts)."""
        agents = info.get('agent_info')
        for part in [info, *(agents.values() if isinstance(agents, dict) else ())]:
            for key in self.spec.keys() & part.keys():
                value = as_number(part[key])
                if value is None:
                    raise ValueError(f"env.info_stats: the env's info[{key!r}] is {type(part[key]).__name__} "
                                     f"{part[key]!r:.80}; expected a number")
                self._add(key, value, 1)

    def _add(self, key: str, total: float, count: int) -> None:
        """``count`` values adding up to ``total`` (most_recent: the last of them) into ``key``'s aggregate."""
        keep = self.spec[key] == 'most_recent' or key not in self._total
        self._total[key] = total if keep else self._total[key] + total
        self._count[key] = self._count.get(key, 0) + count

    def pop(self) -> dict[str, float]:
        """Each key's aggregate over the values recorded since the last call (keys with none are left out)."""
        return {key: total / count if self.spec[key] == 'average' else total
                for key, (total, count) in self.pop_parts().items()}

    def pop_parts(self) -> dict[str, tuple[float, int]]:
        """``pop``'s parts, ``{key: (total or last value, count)}``, for another process's ``add_parts``."""
        parts = {key: (total, self._count[key]) for key, total in self._total.items()}
        self._total, self._count = {}, {}
        return parts

    def add_parts(self, parts: dict[str, tuple[float, int]]) -> None:
        """Merge another recorder's ``pop_parts`` (a later most-recent value replaces this one's)."""
        for key, (total, count) in parts.items():
            self._add(key, total, count)


class ReturnTally:
    """How a policy mode's rewards add up into its episodes' returns: a number each, or a vector reward weighed by
    the policy's ``reward_weights`` (live: ``set_reward_weights`` changes them), and discounted by its
    ``learn.discount_factor`` (a gamma per dimension where that is a list)."""

    def __init__(self, policy: Any) -> None:
        self.weights = getattr(policy, 'reward_weights', None)
        self.dim = None if self.weights is None else len(self.weights)
        gamma = policy.cfg.learn.discount_factor
        self.gamma = np.asarray(gamma, np.float64) if isinstance(gamma, (list, tuple)) else float(gamma)

    def reward(self, value: Any, what: str) -> float | np.ndarray:
        """One step's reward, checked: a number, or ``dim`` of them."""
        return to_reward(value, self.dim, what)

    def column(self, rewards: np.ndarray, env_ids: list[int]) -> None:
        """Check a column of the envs' rewards: ``[N]``, or ``[N, dim]`` for a vector reward."""
        if rewards.shape[1:] != (() if self.dim is None else (self.dim,)):
            for env_id, value in zip(env_ids, rewards):
                self.reward(value, f"env {env_id}'s reward")

    def total(self, reward: Any) -> Any:
        """``reward`` (``[...]``, or ``[..., D]``) as the return counts it."""
        return reward if self.weights is None else np.asarray(reward, np.float64) @ self.weights

    def discounted(self, reward: Any, step: Any) -> Any:
        """``gamma^step`` times ``reward`` (each dimension its own gamma), as the discounted return counts it."""
        if self.weights is None:
            return self.gamma ** step * reward
        return (self.gamma ** np.asarray(step)[..., None] * np.asarray(reward, np.float64) * self.weights).sum(-1)

    def dim_metrics(self, returns: Any) -> dict[str, float]:
        """A vector reward's return per dimension, ``return_<d>`` (nothing for a number)."""
        return {} if self.weights is None else {f'return_{d}': float(v) for d, v in enumerate(returns)}


def return_metrics(total: float, discounted: float, length: int) -> dict[str, float]:
    """ALF's episode metrics beside the return: the discounted return and the average reward per step."""
    return {'discounted_return': float(discounted), 'reward_per_step': float(total) / max(int(length), 1)}


def team_episode(team: dict[str, float], info: dict | None, manager: Any) -> dict[str, float]:
    """A multi-agent env's episode as the logs count it (``AgentSlots``' ``info['team']``): the team's return (the
    sum over agents) and length, each agent's return and length by its id, and the info metrics of the last agent's
    info."""
    return {**team, 'reward_per_step': team['return'] / max(int(team['length']), 1),
            **episode_metrics(info, getattr(manager, 'info_metrics', ()))}


def mean_metrics(episodes: list[dict[str, float]]) -> dict[str, float]:
    """Per metric, the mean over the episodes that reported it (``is_success`` as ``success_rate``); the
    episodes' ``return`` and ``length`` are not metrics."""
    values: dict[str, list[float]] = {}
    for episode in episodes:
        for key, value in episode.items():
            if key not in ('return', 'length'):
                values.setdefault(LOGGED_AS.get(key, key), []).append(value)
    return {key: float(np.mean(v)) for key, v in values.items()}
