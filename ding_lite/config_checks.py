"""What a config's features need of each other, checked when it compiles (``compile_config``): a hindsight buffer's
type, prioritized replay's buffer, a batch the buffer can hold, an env id, the reward clip. The machinery that reads,
merges and saves configs is ``ding_lite.config``'s; what works with what across pipelines is
``ding_lite.capabilities``'."""
from __future__ import annotations

import logging
from typing import Any

from easydict import EasyDict

from .registry import BUFFER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY
from .utils.default_config import ConfigError

logger = logging.getLogger(__name__)
_said: set[tuple[str, str]] = set()


def her_buffer_type(policy_user: dict, buffer_type: str) -> str:
    """'her' where ``policy.other.replay_buffer.her`` asks for hindsight replay on the uniform buffer (checked)."""
    her = ((policy_user.get('other') or {}).get('replay_buffer') or {}).get('her')
    if her is None:
        return buffer_type
    from .data.her import check_her
    check_her(her)
    if policy_user.get('priority'):  # a pair refused by ding_lite.capabilities
        return buffer_type
    if buffer_type not in ('naive', 'her'):
        raise ConfigError(f"policy.other.replay_buffer.her relabels goals in the uniform buffer; the replay buffer's "
                          f"type is {buffer_type!r} (policy.priority=True picks 'priority'): set her=None or use "
                          f"the uniform buffer")
    return 'her'


def check_priority(policy: EasyDict, buffer_type: str) -> None:
    """``priority`` needs a buffer that takes priorities (its type, unless given, follows the flag), and
    ``priority_IS_weight`` needs ``priority``."""
    if policy.get('priority') and not hasattr(BUFFER_REGISTRY.get(buffer_type), 'update'):
        raise ConfigError(f"policy.priority=True needs a prioritized replay buffer, but the replay buffer's type is "
                          f"{buffer_type!r}: leave create_config.replay_buffer.type unset (priority=True picks "
                          f"'priority') or set it to 'priority'")
    if policy.get('priority_IS_weight') and not policy.get('priority'):
        raise ConfigError("policy.priority_IS_weight=True weights TD errors by a prioritized buffer's "
                          "importance-sampling weights: set policy.priority=True too, or leave it False")


def check_batch_fits(policy: EasyDict) -> None:
    """A learn batch no larger than the replay buffer."""
    batch_size = policy.get('learn', {}).get('batch_size')
    capacity = policy.other.replay_buffer.get('replay_buffer_size')
    if isinstance(batch_size, int) and isinstance(capacity, (int, float)) and batch_size > capacity:
        raise ConfigError(f"policy.learn.batch_size={batch_size} is larger than the replay buffer's capacity "
                          f"policy.other.replay_buffer.replay_buffer_size={capacity}: no batch could ever be drawn")


def check_env_id(env_id: Any) -> None:
    """``env.env_id`` is an id (a str); envs made in Python go to a pipeline's ``env_setting``."""
    if env_id is None or isinstance(env_id, str):
        return
    raise ConfigError(f"env.env_id must be a gymnasium id (a str such as 'Pendulum-v1'), got a {type(env_id).__name__}"
                      f": give envs made in Python as serial_pipeline(cfg, env_setting=...) (a gymnasium VectorEnv, "
                      f"or a list of envs or factories), or set env.env_id to the id and env.collector_env_num to "
                      f"the number of envs (create_config.env_manager.type='subprocess' for a process each)")


def multi_agent_type(policy_type: str, policy_user: dict, env_type: str | None) -> str:
    """The registered policy that runs ``policy_type`` with DI-engine's ``policy.multi_agent=True`` (its MASAC form,
    said once); ``ConfigError`` for a policy without one, or an env type without an agent axis."""
    cls = POLICY_REGISTRY.get(policy_type)
    if not policy_user.get('multi_agent') or getattr(cls, 'agent_axis', False):
        return policy_type
    variant = vars(cls).get('multi_agent_type')
    if variant is None:
        raise ConfigError(f"policy.multi_agent=True: policy {policy_type!r} has no multi-agent form; 'sac' (as "
                          f"'masac') and 'discrete_sac' (as 'discrete_masac') have, or set multi_agent=False and "
                          f"train independent agents on a PettingZoo env (env.type='pettingzoo_agents')")
    if env_type in ENV_REGISTRY and not getattr(ENV_REGISTRY.get(env_type), 'agent_axis', False):
        raise ConfigError(agent_axis_error(False, variant, f"type {env_type!r}"))
    if (policy_type, variant) not in _said:
        _said.add((policy_type, variant))
        logger.info(f"policy.multi_agent=True: policy {policy_type!r} runs as {variant!r} (DI-engine's MASAC)")
    return variant


def check_agent_axis(cfg: EasyDict) -> None:
    """A policy with an agent axis (MASAC) needs an env with one (DI-engine's ``petting_zoo``), and such an env such
    a policy: ``ConfigError`` otherwise (an env type not registered is checked when it is built)."""
    if cfg.env.type not in ENV_REGISTRY:
        return
    env_axis = bool(getattr(ENV_REGISTRY.get(cfg.env.type), 'agent_axis', False))
    if env_axis != bool(getattr(POLICY_REGISTRY.get(cfg.policy.type), 'agent_axis', False)):
        raise ConfigError(agent_axis_error(env_axis, cfg.policy.type, f"type {cfg.env.type!r}"))


def agent_axis_error(env_axis: bool, policy_type: str, env: str) -> str:
    """What to do where the env and the policy disagree on an agent axis."""
    if env_axis:
        return (f"env {env} has a row per agent (DI-engine's multi-agent observations): set policy.multi_agent=True "
                f"(MASAC), or give each agent a slot of its own with env.type='pettingzoo_agents'")
    return (f"policy {policy_type!r} (policy.multi_agent=True: MASAC) reads DI-engine's multi-agent observations "
            f"(agent_state, global_state), which env {env} does not give: use env.type='pettingzoo_team', or set "
            f"policy.multi_agent=False (independent agents on a PettingZoo env: env.type='pettingzoo_agents')")


def agent_id_input(cfg: EasyDict) -> None:
    """``policy.model.agent_id_input``: the multi-agent env appends each agent's one-hot index to its observations
    (the model reads it as part of them); refused for an env without agents."""
    if not (cfg.policy.get('model') or {}).get('agent_id_input'):
        return
    env_cls = ENV_REGISTRY.get(cfg.env.type) if cfg.env.type in ENV_REGISTRY else None
    if not getattr(env_cls, 'agent_slots', False):
        raise ConfigError(f"policy.model.agent_id_input=True appends the agent's index to a multi-agent env's "
                          f"observations, but env type {cfg.env.type!r} has no agents: leave it False")
    cfg.env.agent_id_input = True


def reward_clip_bounds(clip: Any) -> tuple[float, float] | None:
    """``env.reward_clip`` as ``(low, high)``: None, a number c > 0 (``[-c, c]``) or a pair low < high."""
    if clip is None:
        return None
    if isinstance(clip, (int, float)) and not isinstance(clip, bool) and clip > 0:
        return -float(clip), float(clip)
    if isinstance(clip, (list, tuple)) and len(clip) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in clip) and clip[0] < clip[1]:
        return float(clip[0]), float(clip[1])
    raise ConfigError(f"env.reward_clip must be None, a number c > 0 (rewards clipped to [-c, c]) or a pair "
                      f"[low, high] with low < high; got {clip!r}")


INFO_AGGREGATIONS = ('average', 'sum', 'most_recent')  # ML-Agents' StatsAggregationMethod, by its lower-case names


def info_stats_spec(spec: Any) -> dict[str, str]:
    """``env.info_stats`` as ``{info key: aggregation}``; ML-Agents' upper-case names (``'MOST_RECENT'``) accepted."""
    if not spec:
        return {}
    if not isinstance(spec, dict) or not all(isinstance(key, str) for key in spec):
        raise ConfigError(f"env.info_stats must be a dict {{info key: aggregation}} (aggregations "
                          f"{list(INFO_AGGREGATIONS)}), got {spec!r}")
    bad = {key: how for key, how in spec.items() if str(how).lower() not in INFO_AGGREGATIONS}
    if bad:
        raise ConfigError(f"env.info_stats: {bad} is not an aggregation; expected one of {list(INFO_AGGREGATIONS)} "
                          f"(ML-Agents' AVERAGE, SUM, MOST_RECENT)")
    return {key: str(how).lower() for key, how in spec.items()}
