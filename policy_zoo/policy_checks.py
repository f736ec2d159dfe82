"""The compile-time refusals every policy shares: DI-engine settings with no counterpart here, each named with what
to set instead (nothing is accepted only to be ignored)."""
from __future__ import annotations

from easydict import EasyDict

from ding_lite.utils.default_config import ConfigError


def refuse_unsupported_modes(cls: type, cfg: EasyDict) -> None:
    """``ConfigError`` for an on-policy, command-mode, episode-collecting or policy-data setting, and for an agent
    axis on a class without one (``cls.agent_axis``)."""
    for key, what in (('multi_agent', 'single-agent'), ('on_policy', 'off-policy')):
        if cfg.get(key) and not (key == 'multi_agent' and cls.agent_axis):
            raise ConfigError(f"policy.{key}=True: ding_lite's policies are {what} ({cls.__name__}); set "
                              f"policy.{key}=False")
    if cfg.get('transition_with_policy_data'):
        raise ConfigError("policy.transition_with_policy_data=True: transitions hold obs, action, reward, next_obs "
                          "and done; keep the policy's logits with policy.collect.collector_logit=True instead")
    if cfg.collect.get('n_episode') is not None:
        raise ConfigError(f"policy.collect.n_episode={cfg.collect.n_episode!r}: the pipelines collect "
                          f"policy.collect.n_sample transitions per call (whole episodes are "
                          f"EpisodeSerialCollector.collect(n_episode)); set n_sample and leave n_episode None")
    if cfg.get('command'):
        raise ConfigError(f"policy.command={dict(cfg.command)!r}: DI-engine's command mode has no counterpart "
                          f"here (eps schedules are policy.other.eps); leave it empty")
