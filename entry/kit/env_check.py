"""The env against the model and policy, before anything is collected: shapes read or checked, one first step."""
from __future__ import annotations

import logging
import math
import os
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from easydict import EasyDict

from ding_lite.config import ConfigError, save_config
from ding_lite.config_checks import agent_axis_error
from ding_lite.data.collate import to_reward
from ding_lite.utils.curriculum import Curriculum, EpisodeParameters
from ding_lite.worker.episode_metrics import stop_key
from ding_lite.worker.finite_check import env_name
from ding_lite.worker.memory import EnvMemory
from envs.agent_slots import FirstAgent
from envs.hybrid import HybridSpace
from envs.from_gym import adapted_env
from policy_zoo import Policy, get_policy_cls

logger = logging.getLogger(__name__)
_OBS_KEYS = ('obs_shape', 'agent_obs_shape', 'global_obs_shape')  # DI-engine's names of the observation size


def model_obs_shape(space: gym.Space) -> int | list[int] | dict[str, int | list[int]]:
    """The model's ``obs_shape`` for an (adapted) observation space: ``[C, H, W]`` for images, else a size; a Dict
    of images and vectors (``ObsAdapter``'s) as ``{key: shape}``."""
    if isinstance(space, gym.spaces.Dict) and 'obs' in space.spaces:  # {'obs', 'action_mask'}
        space = space['obs']
    if isinstance(space, gym.spaces.Dict):
        return {key: model_obs_shape(sub) for key, sub in space.spaces.items()}
    shape = tuple(space.shape)
    return [int(s) for s in shape] if len(shape) == 3 else int(math.prod(shape))


def _action_size(policy_cfg: EasyDict, space: gym.Space, name: str) -> int:
    """The action size the model needs; ``ConfigError`` for a space the policy kind cannot act in."""
    kind = get_policy_cls(policy_cfg).action_space_type
    if kind == 'hybrid' and isinstance(space, HybridSpace):
        return space.box_size
    if kind == 'hybrid':
        raise ConfigError(f"policy {policy_cfg.type!r} acts in hybrid actions (a Tuple or Dict of a Discrete and a "
                          f"Box), but env {name} has {space}: use policy 'sac' or 'discrete_sac'")
    other = {'continuous': "'discrete_sac' (Discrete actions)", 'discrete': "'sac' (Box actions)"}[kind]
    if kind == 'continuous' and isinstance(space, gym.spaces.Box) and len(space.shape) == 1:
        return int(space.shape[0])
    if kind == 'discrete' and isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, (gym.spaces.Box, gym.spaces.Discrete)):
        hint = ("it acts in a 1-D Box: an action of several dims needs an action wrapper in env.wrappers; N envs "
                "stepping together (a vector env) go separately: env_setting=the VectorEnv or a list of factories, "
                "or env.collector_env_num=N") if isinstance(space, gym.spaces.Box) and kind == 'continuous' \
            else f"use policy {other}"
    else:  # MultiDiscrete, MultiBinary, Dict, Tuple, ...
        hint = ("the SAC family acts in a 1-D Box ('sac'), a Discrete space ('discrete_sac') or a Tuple or Dict of one "
                "Discrete and one 1-D Box ('hybrid_sac', which 'sac' runs as on such an env); map the env's actions "
                "to one of them with a gymnasium action wrapper in env.wrappers")
    wanted = 'continuous (Box)' if kind == 'continuous' else 'Discrete'
    raise ConfigError(f"policy {policy_cfg.type!r} needs {wanted} actions, but env {name} has {space}: {hint}")


def fit_model_to_env(cfg: EasyDict, env: Any, save: bool = True) -> None:
    """Fill ``policy.model.obs_shape``/``action_shape`` from the env's adapted spaces where the config leaves them
    out (then re-save ``total_config.py`` when ``save``), check them where given, and refuse action spaces the
    policy cannot use: each a ``ConfigError`` naming the key, the env's value and the model's."""
    name, model = env_name(env), cfg.policy.model
    _check_stop_on(cfg.policy.eval.evaluator.get('stop_on'), env, name)
    if _agent_axis(cfg, env, name):
        return _fit_agents(cfg, env, name, save)
    hybrid = isinstance(env.action_space, HybridSpace) and _hybrid_policy(cfg, env.action_space, name)
    env_obs, env_act = model_obs_shape(env.observation_space), _action_size(cfg.policy, env.action_space, name)
    filled = bool(hybrid)
    given = [key for key in _OBS_KEYS if model.get(key) is not None]
    for key in given:
        if not _same_shape(model[key], env_obs):
            whose = f"observations are {env_obs!r} (CHW, after adaptation)" if isinstance(env_obs, (list, dict)) \
                else f"observation size is {env_obs} (after adaptation)"
            raise ConfigError(f"policy.model.{key}={model[key]!r} does not match env {name}, whose {whose}: set "
                              f"{key}={env_obs!r}, or leave it out to read it from the env")
    if not given and 'obs_shape' in model:
        model.obs_shape, filled = env_obs, True
    if model.get('action_shape') is not None and _flat(model.action_shape) != env_act:
        raise ConfigError(f"policy.model.action_shape={model.action_shape!r} does not match env {name}, whose "
                          f"action size is {env_act}: set action_shape={env_act}, or leave it out to read it from "
                          f"the env")
    if model.get('action_shape') is None and 'action_shape' in model:
        model.action_shape, filled = env_act, True
    if filled and save and os.path.isdir(cfg.exp_name):
        save_config(cfg, os.path.join(cfg.exp_name, 'total_config.py'))


def _hybrid_policy(cfg: EasyDict, space: HybridSpace, name: str) -> bool:
    """A hybrid action space (a Discrete and a Box): the model's ``choices`` read from the env; a policy that cannot
    act in it refused (``'sac'`` runs as ``'hybrid_sac'`` there, resolved when the config compiled). True (the config
    changed)."""
    policy = cfg.policy
    if get_policy_cls(policy).action_space_type != 'hybrid':
        raise ConfigError(f"policy {policy.type!r} cannot act in the hybrid actions of env {name} ({space}: a "
                          f"Discrete and a Box): use policy 'sac' (which runs as 'hybrid_sac' there) or 'hybrid_sac'")
    if policy.model.get('choices') not in (None, space.n):
        raise ConfigError(f"policy.model.choices={policy.model.choices!r} does not match env {name}, whose Discrete "
                          f"part has {space.n}: leave it out to read it from the env")
    policy.model.choices = space.n
    return True


def _check_stop_on(stop_on: str | None, env: Any, name: str) -> None:
    """``evaluator.stop_on`` names one of the env's agents or teams (``ConfigError`` naming them otherwise)."""
    if stop_on is None:
        return
    agents = getattr(env, 'agents', None) or getattr(getattr(env, 'env_ref', None), 'agents', None)
    if not agents:
        raise ConfigError(f"policy.eval.evaluator.stop_on={stop_on!r} names an agent or a team, but env {name} has "
                          f"one agent; leave it None")
    try:
        stop_key(stop_on, list(agents))
    except ValueError as error:
        raise ConfigError(f"policy.eval.{error}") from None


def _agent_axis(cfg: EasyDict, env: Any, name: str) -> bool:
    """Whether the env and the policy have an agent axis (MASAC on DI-engine's multi-agent observations); a
    ``ConfigError`` where one of them has and the other has not."""
    env_axis = bool(getattr(getattr(env, 'env_ref', env), 'agent_axis', False))
    policy_axis = bool(get_policy_cls(cfg.policy).agent_axis)
    if env_axis != policy_axis:
        raise ConfigError(agent_axis_error(env_axis, cfg.policy.type, name))
    return env_axis


def _fit_agents(cfg: EasyDict, env: Any, name: str, save: bool) -> None:
    """``fit_model_to_env`` for MASAC: ``agent_obs_shape``, ``global_obs_shape`` and ``action_shape`` read from the
    env's ``agent_state``, ``global_state`` and one agent's action space, or checked against them."""
    space = env.observation_space
    if not isinstance(space, gym.spaces.Dict) or 'global_state' not in space.spaces:
        raise ConfigError(f"MASAC reads agent_state and global_state, but env {name} gives {space}: set "
                          f"env.agent_obs_only=False")
    found = {'agent_obs_shape': int(space['agent_state'].shape[-1]),
             'global_obs_shape': int(space['global_state'].shape[-1]),
             'action_shape': _action_size(cfg.policy, env.action_space, name)}
    model, filled = cfg.policy.model, False
    for key, value in found.items():
        if model.get(key) is None:
            model[key], filled = value, True
        elif _flat(model[key]) != value:
            raise ConfigError(f"policy.model.{key}={model[key]!r} does not match env {name}, whose value is {value}: "
                              f"set {key}={value}, or leave it out to read it from the env")
    if filled and save and os.path.isdir(cfg.exp_name):
        save_config(cfg, os.path.join(cfg.exp_name, 'total_config.py'))


def _flat(shape: Any) -> int:
    return int(math.prod(shape)) if isinstance(shape, (list, tuple)) else int(shape)


def _same_shape(given: Any, env_obs: int | list[int] | dict) -> bool:
    if isinstance(env_obs, dict):
        return isinstance(given, dict) and set(given) == set(env_obs) and \
            all(_same_shape(given[k], v) for k, v in env_obs.items())
    if isinstance(env_obs, list):  # an image: the layout matters, not only the size
        return isinstance(given, (list, tuple)) and [int(s) for s in given] == env_obs
    return not (isinstance(given, (list, tuple)) and len(given) > 1) and _flat(given) == env_obs


def _first_parameters(cfg: EasyDict, env: Any, name: str) -> None:
    """The probe made with the first episode's ``env.environment_parameters``, as the run's envs are: a
    ``ConfigError`` naming them where the env does not take them."""
    spec = cfg.env.get('environment_parameters')
    if not spec:
        return
    via = cfg.env.get('environment_parameters_via', 'make')
    values = EpisodeParameters(Curriculum(spec), cfg.seed, via).draw()
    try:
        env.set_parameters(values, via)
    except Exception as error:  # the env's own words, whatever it raises
        how = 'gymnasium.make keywords' if via == 'make' else 'reset options'
        raise ConfigError(f"env.environment_parameters {values} as {how} (environment_parameters_via={via!r}): env "
                          f"{name} refused them: {type(error).__name__}: {error}") from error


def _unread_options(cfg: EasyDict, env: Any, name: str) -> None:
    """``ConfigError`` naming the environment parameters given as reset options that the env's first reset did not
    read (a typo, or a parameter the env does not have), as ``gymnasium.make`` refuses an unknown keyword."""
    unread = getattr(env, 'unread_options', [])  # (a GymnasiumEnv's; a user's own env reads its options itself)
    if unread:
        raise ConfigError(f"env.environment_parameters {unread} (environment_parameters_via='reset'): env {name}'s "
                          f"reset never read them from its options; check their names against what its reset reads, "
                          f"or give them via 'make' (gymnasium.make keywords)")


def first_step(cfg: EasyDict, env_setting: tuple, policy: Policy, buffers: list[Any] = ()) -> None:
    """Reset one env (a probe built as the run's envs are), run its observation through the collect and eval
    forwards, step it with the collect action, and check that ``buffers`` fit in memory: a ``ConfigError`` naming
    what failed, before any env step is collected. The run's random streams are left as they were."""
    env_fn, collector_cfgs, _ = env_setting
    env = adapted_env(env_fn, cfg=collector_cfgs[0])
    if getattr(env, 'agent_slots', False):
        env = FirstAgent(env)
    name = env_name(env)
    try:
        env.seed(cfg.seed, dynamic_seed=False)
        _first_parameters(cfg, env, name)
        obs = env.reset()
        _unread_options(cfg, env, name)
        if isinstance(obs, dict) and (cfg.env.get('norm_obs') or {}).get('use_norm'):
            raise ConfigError(f"env.norm_obs.use_norm=True normalises vector observations, but env {name}'s are a "
                              f"Dict ({sorted(obs)}: an action mask, or DI-engine's agent and global states); set "
                              f"env.norm_obs.use_norm=False")
        if isinstance(obs, dict) and cfg.policy.collect.collector.get('report_collected'):
            raise ConfigError(f"policy.collect.collector.report_collected=True scores collected transitions as rows of "
                              f"arrays, but env {name}'s observations are a Dict ({sorted(obs)}), collected one by "
                              f"one: leave it False")
        _check_obs(obs, env.observation_space, name, 'reset')
        with torch.random.fork_rng(devices=[]):
            outputs = {mode: _forward(policy, mode, obs, name, cfg) for mode in ('collect', 'eval')}
        action = outputs['collect']['action'].numpy()
        try:
            timestep = env.step(action)
        except Exception as error:  # the env's own check of the action, whatever it raises
            raise ConfigError(f"first step: env {name} rejected the policy's action {action!r} (shape "
                              f"{action.shape}, {action.dtype}) for its action space {env.action_space}: "
                              f"{type(error).__name__}: {error}") from error
        _check_obs(timestep.obs, env.observation_space, name, 'step')
        if not (cfg.env.get('norm_obs') or {}).get('use_norm'):
            _warn_scale(env, [obs, timestep.obs], name)
        weights = cfg.policy.get('reward_weights')
        try:  # the probe is env 0's twin: the collector's words
            reward = to_reward(timestep.reward, len(weights) if weights else None, "env 0's reward")
        except ValueError as error:
            raise ConfigError(f"first step: {error}") from None
        example = {'obs': obs, 'next_obs': timestep.obs, 'action': action, 'reward': np.zeros_like(reward),
                   'done': False}
        if policy.memory:  # a recurrent policy's transitions keep their memory too
            state = outputs['collect']['state'][None]
            example.update({k: v[0] for k, v in EnvMemory(policy.memory, 1).acted([0], state).items()})
        for buffer in buffers:
            buffer.check_memory(example)
    finally:
        env.close()


def _check_obs(obs: Any, space: gym.Space, name: str, where: str) -> None:
    if not isinstance(space, gym.spaces.Box):
        return
    array = np.asarray(obs)
    if array.shape != space.shape:
        raise ConfigError(f"first step: env {name}'s {where} returned an observation of shape {array.shape}, but its "
                          f"observation_space says {space.shape}: make the two agree")


SCALE_LIMIT = 1e2  # beyond this an observation is far from the unit scale the nets' initialisation assumes


def _warn_scale(env: Any, observations: list[Any], name: str) -> None:
    """One warning where an observation (a Dict's key, or a vector's dims) reaches beyond ``SCALE_LIMIT``: its
    critic's targets and gradients would be badly scaled, and training diverges without a word."""
    adapter = getattr(env, 'obs_adapter', None)
    source = adapter.source if adapter is not None else env.observation_space
    parts: dict[str, tuple[float, str]] = {}
    for obs in observations:
        for key, value in _observation_parts(source, obs, adapter):
            array = np.abs(np.asarray(value, dtype=np.float64)).reshape(-1)
            if array.size and np.isfinite(array).all() and array.max() > SCALE_LIMIT:
                dims = np.flatnonzero(array > SCALE_LIMIT)
                where = f"{key} dims {dims[:6].tolist()}{'...' if len(dims) > 6 else ''}" if array.size > 1 else key
                parts[key] = (max(array.max(), parts.get(key, (0.0, ''))[0]), where)
    if parts:
        dtype = getattr(source, 'dtype', None)
        cast = ' (float64, cast to float32)' if dtype == np.float64 else ''
        seen = '; '.join(f"{where} reach {size:.3g}" for size, where in parts.values())
        logger.warning(f"warning: env {name}: observations far from unit scale{cast}: {seen} in magnitude at reset "
                       f"and the first step. The critic's targets and gradients will be badly scaled and training "
                       f"may diverge: set env.norm_obs.use_norm=True to normalise them with running statistics")


def _observation_parts(source: gym.Space, obs: Any, adapter: Any) -> list[tuple[str, Any]]:
    """``[(name, values)]`` of an (adapted) observation: a Dict's non-image keys by name, else the whole vector;
    images (uint8) have none."""
    if isinstance(source, gym.spaces.Dict) and adapter is not None and not adapter.identity:
        raw = obs if isinstance(obs, dict) else gym.spaces.unflatten(source, np.asarray(obs))  # images kept, or not
        return [(f"key {k!r}", v) for k, v in raw.items() if getattr(source[k], 'dtype', None) != np.uint8]
    if isinstance(source, gym.spaces.Box) and source.dtype != np.uint8:
        return [('observation', obs)]
    return []


def _forward(policy: Policy, mode: str, obs: Any, name: str, cfg: EasyDict) -> dict[str, torch.Tensor]:
    if mode not in policy._enable_field:  # the parallel driver's policy: the actors' mode, over the same model
        policy = type(policy)(policy._cfg, model=policy.model, enable_field=[mode])
    memory = {'memory': EnvMemory(policy.memory, 1).inputs([0])} if policy.memory else {}
    try:
        return getattr(policy, f'{mode}_mode').forward({0: obs}, **memory)[0]
    except Exception as error:  # a model that cannot take the env's observations fails in torch, at any depth
        array = np.asarray(obs) if not isinstance(obs, dict) else None
        what = f"shape {array.shape}, {array.dtype}" if array is not None else f"a {type(obs).__name__}"
        model = {k: cfg.policy.model.get(k) for k in ('type', *_OBS_KEYS, 'action_shape') if k in cfg.policy.model}
        raise ConfigError(f"first step: the {mode} forward of policy {cfg.policy.type!r} failed on the first "
                          f"observation of env {name} ({what}) with policy.model {model}: {type(error).__name__}: "
                          f"{str(error).splitlines()[0] if str(error) else ''}") from error
