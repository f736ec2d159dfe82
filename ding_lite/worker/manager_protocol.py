"""The one protocol between the workers (collector, evaluator) and an env manager: what the manager offers (its step
paths, its info metrics, how its episodes are counted, the hooks its episodes call), read through ``offers(env)``,
and what a worker reads of a policy mode, through ``policy_mode(mode)``. The workers probe neither."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from .episode_metrics import team_episode

Record = dict[str, float]


class EpisodeRecords:
    """How a manager's finished episodes are counted: one per env (an env slot's episode is its own)."""

    def __init__(self, env_num: int) -> None:
        self.env_num = env_num

    @property
    def groups(self) -> int:
        """How many episodes can run at once: an evaluation's episodes are shared out over them."""
        return self.env_num

    def group_of(self, env_id: int) -> int:
        return env_id

    def record(self, env_id: int, info: dict | None, own: Callable[[], Record]) -> Record | None:
        """The finished-episode record of ``env_id``'s episode ending with ``info``: the worker's ``own()``."""
        return own()


class TeamRecords(EpisodeRecords):
    """Agent slots (``envs.AgentSlots``): an agent's episode ends with its team's, which counts once for all of its
    env's slots; the record carries the team's return and length and each agent's (``info['team']``)."""

    def __init__(self, slots: Any) -> None:
        super().__init__(slots.env_num)
        self.slots = slots

    @property
    def groups(self) -> int:
        return self.slots.team_envs

    def group_of(self, env_id: int) -> int:
        return self.slots.env_of(env_id)

    def record(self, env_id: int, info: dict | None, own: Callable[[], Record]) -> Record | None:
        team = (info or {}).get('team')
        return None if team is None else team_episode(team, info, self.slots)


class RoundHook:
    """What a feature that changes episodes does at the workers' seams (ML-Agents' lessons: ``worker.lessons``)."""

    def collected(self, record: Record) -> None:
        """A training episode finished (``record``: its finished-episode record)."""

    def evaluated(self, returns: list[float]) -> None:
        """An evaluation's episodes finished with ``returns``."""

    def round_done(self, envstep: int, logger: Any, tb_logger: Any) -> None:
        """A collection round is over, at ``envstep`` (the collector's logger and tensorboard)."""

    def log(self, envstep: int, tb_logger: Any) -> None:
        """The collector writes its log line."""

    @property
    def stop_allowed(self) -> bool:
        """Whether an evaluation's return may stop the run now (an easier lesson's may not)."""
        return True


@dataclass(frozen=True)
class Offers:
    """What an env manager offers the workers that step it."""

    episodes: EpisodeRecords
    stacks_obs: bool = True          # ``ready_obs_batch()``: the ready envs' observations as one array
    steps_columns: bool = True       # ``step_batch`` / ``step_batch_begin``: a step of many envs as columns
    asynchronous: bool = False       # a step returns envs acted on in an earlier step too
    info_metrics: tuple[str, ...] = ()
    hooks: tuple[RoundHook, ...] = ()


def offers(env: Any) -> Offers:
    """``env.offers()``, which the managers of ``envs/`` declare; for a user's manager that declares nothing (DI-engine's
    interface: ``step`` and ``ready_obs``), what it has, read here once per round and nowhere else."""
    declared = getattr(env, 'offers', None)
    if declared is not None:
        return declared()
    return Offers(EpisodeRecords(env.env_num), stacks_obs=hasattr(env, 'ready_obs_batch'),
                  steps_columns=hasattr(env, 'step_batch'), asynchronous=bool(getattr(env, 'asynchronous', False)),
                  info_metrics=tuple(getattr(env, 'info_metrics', ()) or ()))


def begin_step_batch(env: Any, ids: list[int], actions: np.ndarray) -> Callable[[], Any]:
    """``env.step_batch(ids, actions)`` begun through the manager's ``step_batch_begin`` (envs in processes of their
    own step while the caller begins other managers' steps); the call returned finishes it. A user's manager with
    ``step_batch`` only (``Offers.steps_columns``) steps at once."""
    begin = getattr(env, 'step_batch_begin', None)
    if begin is not None:
        return begin(ids, actions)
    step = env.step_batch(ids, actions)
    return lambda: step


# what a worker reads of a policy mode beyond DI-engine's (forward, reset, process_transition, get_train_sample,
# state_dict); a mode that does not offer one (a user's own namespace) reads as None
MODE_EXTRAS = ('memory', 'forward_batch', 'plain_transition_keys', 'pop_entropy', 'reward_weights', 'cfg')


def policy_mode(mode: Any) -> Any:
    """``mode`` itself where it offers every ``MODE_EXTRAS`` (``Policy``'s modes do), else a view of it with None for
    what it lacks (read once, here, when a worker is given a policy)."""
    if mode is None or all(hasattr(mode, name) for name in MODE_EXTRAS):
        return mode
    names = {name: getattr(mode, name) for name in dir(mode) if not name.startswith('__')}
    return SimpleNamespace(**{**dict.fromkeys(MODE_EXTRAS), **names})
