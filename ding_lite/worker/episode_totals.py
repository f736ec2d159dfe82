"""Each env's episode so far, as arrays indexed by env, added to a step of envs at a time; and many collectors'
totals as rows of one set of arrays, so a run of many seeds adds every seed's step in one pass."""
from __future__ import annotations

from typing import Any

import numpy as np

from .episode_metrics import ReturnTally


class EpisodeTotals:
    """Per env: the episode's return (float64: the env's float32 rewards add up as exactly as in Python), its
    discounted return (the sum of ``gamma^t r_t``), its running return ``R = gamma R + r`` (whose spread scales
    rewards under ``norm_reward``), its length, and with a vector reward its return per dimension."""

    def __init__(self, env_num: int, dim: int | None = None) -> None:
        self.ret, self.discounted, self.running = np.zeros(env_num), np.zeros(env_num), np.zeros(env_num)
        self.length = np.zeros(env_num, dtype=np.int64)
        self.dims = None if dim is None else np.zeros((env_num, dim))

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        return {'ret': self.ret, 'discounted': self.discounted, 'running': self.running, 'length': self.length,
                **({'dims': self.dims} if self.dims is not None else {})}

    def add(self, index: Any, reward: Any, tally: ReturnTally, norm_reward: bool) -> np.ndarray | None:
        """A step's rewards (of the envs at ``index``) into their episodes' returns, as ``tally`` counts them;
        with ``norm_reward`` the running returns after it (float32), else None."""
        self.ret[index] += tally.total(reward)
        self.discounted[index] += tally.discounted(reward, self.length[index])
        if self.dims is not None:
            self.dims[index] += reward
        if not norm_reward:
            return None
        self.running[index] = tally.gamma * self.running[index] + reward
        return np.asarray(self.running[index], dtype=np.float32)

    def end(self, env_id: int) -> None:
        """``env_id``'s episode is over: its totals start again."""
        for array in self.arrays.values():
            array[env_id] = 0

    @classmethod
    def stack(cls, members: list[EpisodeTotals]) -> EpisodeTotals:
        """One set of totals over every member's envs, member k's as rows ``k * env_num ...``: each member's arrays
        become views of its rows (values kept), so adding to the stack adds to every member."""
        stacked = cls.__new__(cls)
        for name, first in members[0].arrays.items():
            array = np.concatenate([member.arrays[name] for member in members])
            setattr(stacked, name, array)
            for k, member in enumerate(members):
                setattr(member, name, array[k * len(first):(k + 1) * len(first)])
        if members[0].dims is None:
            stacked.dims = None
        stacked._views = [(member, member.ret, member.dims) for member in members]
        return stacked

    def holds(self, members: list[EpisodeTotals]) -> bool:
        """Whether ``members`` are this stack's, each still holding its views (none was sized again)."""
        return len(members) == len(self._views) and all(
            member is own and member.ret is ret and member.dims is dims
            for member, (own, ret, dims) in zip(members, self._views))
