"""The episode collector: whole episodes per ``collect`` (DI-engine's ``EpisodeSerialCollector``)."""
from __future__ import annotations

from typing import Any

from ..registry import SERIAL_COLLECTOR_REGISTRY
from .collector import BaseSerialCollector


@SERIAL_COLLECTOR_REGISTRY.register('episode')
class EpisodeSerialCollector(BaseSerialCollector):
    """Returns at least ``n_episode`` whole episodes per ``collect``; each a list of transitions (or train samples)."""

    config = dict(
        type='episode',              # the registered collector name
        get_train_sample=False,      # True: pass episodes through policy.get_train_sample
    )

    def collect(self, n_episode: int | None = None, train_iter: int = 0,
                policy_kwargs: dict | None = None) -> list[list[Any]]:
        if n_episode is None or n_episode <= 0:
            raise ValueError(f"collect needs a positive n_episode, got {n_episode!r}")
        episodes: list[list[Any]] = []
        while len(episodes) < n_episode:
            for env_id, transition, ended in self._step(policy_kwargs):
                if transition is not None:
                    self._traj[env_id].append(transition)
                if ended:
                    episode = self._traj[env_id]
                    episodes.append(self._policy.get_train_sample(episode) if self._cfg.get_train_sample else episode)
                    self._traj[env_id] = []
        self._maybe_log(train_iter)
        return episodes
