"""Parameter resets (Nikishin et al. 2022, "The Primacy Bias in Deep RL"; BRO's and sbx's ``param_resets``): at given
env steps the networks, their targets, the temperature and every optimizer start again; the replay buffer stays."""
from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import Tensor

from ding_lite.utils.default_config import ConfigError

KEPT = ('reward_norm.',)  # the model's data statistics a reset keeps: env.norm_reward's (obs_norm's by the setting)


class ParamResets:
    """``policy.learn.param_resets``: a list of env steps (sbx's) or a period (BRO's), None for none; ``done`` counts
    the resets made (in the learn state: a resumed run neither repeats one nor misses one)."""

    def __init__(self, spec: Any, keep_obs_norm: bool = True) -> None:
        self.steps, self.period = _parse(spec)
        self.keep = KEPT + (('obs_norm.',) if keep_obs_norm else ())
        self.done = 0

    @property
    def on(self) -> bool:
        return bool(self.steps or self.period)

    def passed(self, envstep: int) -> int:
        """How many reset points lie at or before ``envstep``."""
        if self.period:
            return envstep // self.period
        return sum(step <= envstep for step in self.steps)

    def due(self, envstep: int) -> bool:
        return self.on and self.passed(envstep) > self.done

    def made(self, envstep: int) -> str:
        """Count the reset made at ``envstep``; what was done, for the log."""
        self.done = self.passed(envstep)
        kept = 'kept' if 'obs_norm.' in self.keep else 'reset'
        return (f"parameter reset {self.done} at env step {envstep}: actor, critics, targets, temperature and "
                f"optimizers start again; the buffer and the data's statistics (observation normaliser: {kept}) stay")

    def fresh_state(self, state: dict[str, Any], fresh: dict[str, Any], stays: Iterable[str] = ()) -> dict[str, Any]:
        """``state`` (a policy's learn state) with every entry of ``fresh`` (a newly built policy's: the networks,
        targets, optimizers, temperatures, CQL's Lagrange weight), but for the counters, the entries named in
        ``stays`` (the reward heads') and the model's kept statistics (``keep``), which stay as they were."""
        state = dict(state)
        for key, value in fresh.items():
            if key in ('model', 'target_model'):
                state[key] = {k: v if k.startswith(self.keep) else value.get(k, _initial(k, v))
                              for k, v in state[key].items()}
            elif key not in ('learn_steps', 'param_resets_done', *stays):
                state[key] = value
        return state


def _initial(key: str, value: Tensor) -> Tensor:
    """A running normaliser's statistics as they start (the pipelines attach env.norm_obs's to the model, so a newly
    built one has none): ``var`` and ``scale`` ones, the rest zeros."""
    return torch.ones_like(value) if key.rsplit('.', 1)[-1] in ('var', 'scale') else torch.zeros_like(value)


def _parse(spec: Any) -> tuple[list[int], int | None]:
    """``(the env steps, the period)`` of ``param_resets``; a ``ConfigError`` naming what is expected."""
    if spec is None or spec == []:
        return [], None
    if isinstance(spec, int) and not isinstance(spec, bool) and spec > 0:
        return [], spec
    if isinstance(spec, (list, tuple)) and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in spec) \
            and list(spec) == sorted(set(spec)):
        return list(spec), None
    raise ConfigError(f"policy.learn.param_resets={spec!r}: expected env steps in increasing order (a list, sbx's "
                      f"[50000, 100000]), a period (an int, BRO's 250000: a reset every that many env steps), or None")


__all__ = ['ParamResets']
