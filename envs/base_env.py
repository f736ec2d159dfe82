"""The env interface every registered env implements."""
from __future__ import annotations

import abc
from typing import Any, NamedTuple

import numpy as np
from easydict import EasyDict

from ding_lite.utils.default_config import class_default_config


class BaseEnvTimestep(NamedTuple):
    """One step's result. ``done``: the episode ended for any reason (see ``info['TimeLimit.truncated']``)."""

    obs: Any
    reward: Any
    done: bool
    info: dict


class BaseEnvBatchTimestep(NamedTuple):
    """One step of several envs as columns, a row per env in ``env_id`` order (an env manager's ``step_batch``).

    ``obs`` is the observation after the step (an ended episode's last one), ``reward`` float64, ``done`` the
    episode ended, ``terminated`` it ended other than by a time limit. Envs whose step broke off (restarted after a
    crash) have no row: ``restarted`` names them. ``info`` holds the last info of each episode that ended, by env id.
    """

    env_id: list[int]
    obs: np.ndarray
    reward: np.ndarray
    done: np.ndarray
    terminated: np.ndarray
    restarted: list[int]
    info: dict[int, dict] | None = None


class BaseEnv(abc.ABC):
    """``reset() -> obs``, ``step(action) -> BaseEnvTimestep``, seeding, spaces; built from its config."""

    config: dict = dict(
        collector_env_num=1,        # envs each collector steps
        evaluator_env_num=1,        # envs the evaluator steps
        n_evaluator_episode=None,   # episodes per evaluation; None: one per evaluator env
        stop_value=None,            # the evaluation mean return that ends training; None: never
        norm_obs=dict(              # observation normalisation (SB3's VecNormalize), kept with the policy's model
            use_norm=False,         # normalise by running mean/std of collected observations (frozen in evaluation)
            clip=10.0,              # normalised observations are clipped to [-clip, clip]
        ),
        norm_reward=dict(           # reward normalisation (SB3's VecNormalize rule), kept with the policy's model
            use_norm=False,         # scale learned rewards by the running std of the discounted return (not in eval)
            clip=10.0,              # scaled rewards are clipped to [-clip, clip]
        ),
        reward_clip=None,           # training rewards clipped to [-c, c] (a number) or [low, high]; None: as they are
        info_metrics=[],            # numeric info keys logged per episode (last step's value); is_success always is
        info_stats={},              # {info key: 'average' | 'sum' | 'most_recent'}: read at every step, per log
        environment_parameters={},  # ML-Agents': {name: constant | sampler | {curriculum: [lessons]}} per episode
        environment_parameters_via='make',  # how they reach the env: 'make' keywords or 'reset' options
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    @classmethod
    def declares_config(cls) -> bool:
        """Whether this type declares its own keys (a ``config`` below ``BaseEnv``): then its env section is checked
        against them; a type that declares none reads a free-form section, as DI-engine's envs do."""
        return any('config' in vars(klass) for klass in cls.__mro__[:cls.__mro__.index(BaseEnv)])

    @classmethod
    def create_collector_env_cfg(cls, cfg: dict) -> list[dict]:
        return [cfg] * cfg.get('collector_env_num', 1)

    @classmethod
    def create_evaluator_env_cfg(cls, cfg: dict) -> list[dict]:
        return [cfg] * cfg.get('evaluator_env_num', 1)

    @abc.abstractmethod
    def reset(self) -> Any: ...

    @abc.abstractmethod
    def step(self, action: Any) -> BaseEnvTimestep: ...

    @abc.abstractmethod
    def seed(self, seed: int, dynamic_seed: bool = True) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def state_dict(self) -> dict:
        """The random state a ``reset`` starts from (seeds, generators): env managers take it just before each
        reset so that a resumed run replays the current episode exactly. ``{}``: nothing to restore."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` returned."""

    def set_parameters(self, values: dict[str, Any], via: str = 'make') -> None:
        """The next episode's ``env.environment_parameters``: ``via='make'`` as constructor keywords, ``'reset'``
        as the reset's options. Envs that take none refuse them by name."""
        raise ValueError(f"env.environment_parameters {sorted(values)}: env type {type(self).__name__} takes no "
                         f"environment parameters (a gymnasium env takes them as gymnasium.make keywords or reset "
                         f"options)")

    @property
    @abc.abstractmethod
    def observation_space(self) -> Any: ...

    @property
    @abc.abstractmethod
    def action_space(self) -> Any: ...

    @property
    @abc.abstractmethod
    def reward_space(self) -> Any: ...


class EpisodeSeeds:
    """Seeding as ding_lite's envs do it: with ``dynamic_seed`` every episode starts from a new seed drawn from the
    env's seeded generator, otherwise from the same seed (DI-engine's evaluator convention); the generator is in
    ``state_dict``, so a resumed run replays the episode it was in. Needs an ``action_space`` to seed."""

    _seed: int | None = None
    _dynamic_seed: bool = True
    _rng: np.random.Generator | None = None

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed, self._dynamic_seed = int(seed), dynamic_seed
        self._rng = np.random.default_rng(self._seed)
        self.action_space.seed(self._seed)

    def state_dict(self) -> dict:
        rng = self._rng.bit_generator.state if self._rng is not None else None
        return {'seed': self._seed, 'dynamic_seed': self._dynamic_seed, 'rng': rng}

    def load_state_dict(self, state: dict) -> None:
        self._seed, self._dynamic_seed = state['seed'], state['dynamic_seed']
        if state.get('rng') is not None:
            self._rng = self._rng or np.random.default_rng()
            self._rng.bit_generator.state = state['rng']

    def _episode_seed(self) -> int | None:
        """The seed the next episode resets with: None unseeded, a fresh draw with ``dynamic_seed``, else the seed."""
        if self._seed is None:
            return None
        return int(self._rng.integers(2 ** 31)) if self._dynamic_seed else self._seed

