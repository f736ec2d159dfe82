"""SAC's config checks, completed at compile time: the update's knobs, memory (a recurrent model and the sequences it
learns from), reward signals, reward vectors, behavioural cloning and the optimiser's knobs. Which policies and
pipelines take these features at all is declared in ``ding_lite.capabilities``, and refused there."""
from __future__ import annotations

import math
import os
import warnings

import torch
from easydict import EasyDict

from ding_lite.reward_model.signals import RewardSignals, signal_config
from ding_lite.rl_utils.cloning import BehaviouralCloning
from ding_lite.rl_utils.update_executor import check_amp
from ding_lite.rl_utils.reward_heads import RewardVector, SingleReward, check_weights
from ding_lite.model.heads import INITIALISERS
from ding_lite.utils.default_config import ConfigError, ConfigWarning


def check_sac_config(cls: type, cfg: EasyDict) -> None:
    """Every SAC setting read or refused: memory, signals, reward vectors, the update's knobs."""
    check_memory(cfg)
    check_signals(cfg)
    check_reward_weights(cfg)
    delay = cfg.learn.policy_delay
    if not (isinstance(delay, int) and delay >= 1):
        raise ConfigError(f"policy.learn.policy_delay must be a positive int (critic steps per actor step), got "
                          f"{delay!r}")
    if cfg.model.get('value_network') and not cls.value_network:
        raise ConfigError(f"policy.model.value_network=True builds SAC-v1's state-value network, which policy "
                          f"{cfg.type!r} does not train: use policy type 'sac_v1' for it, or leave it False")
    if not cfg.learn.auto_alpha:
        _warn_alpha_settings(cls, cfg.learn)
    if delay > 1 and cfg.learn.cuda_graph:
        raise ConfigError(f"policy.learn.cuda_graph=True replays one update, but policy_delay={delay} makes the "
                          f"actor step every {delay}th: set policy_delay=1 or cuda_graph=False")
    check_optimiser_knobs(cfg, cls.target_network)
    check_amp(cfg.learn)
    cls.critic_term.check_config(cfg)


def _warn_alpha_settings(cls: type, learn: EasyDict) -> None:
    """One ``ConfigWarning`` naming the temperature's learning settings a fixed alpha leaves unused (DI-engine
    ignores them silently)."""
    default = cls.default_config().learn
    unused = [f"{key}={learn[key]!r}" for key in ('target_entropy', 'learning_rate_alpha', 'log_space')
              if learn.get(key) != default.get(key)]
    if unused:
        warnings.warn(f"policy.learn.auto_alpha=False keeps alpha fixed at {learn.alpha}: {', '.join(unused)} "
                      f"do nothing; set auto_alpha=True to learn alpha with them", ConfigWarning, stacklevel=5)


def ml_agents_memory(cfg: EasyDict) -> None:
    """ML-Agents' ``memory=dict(memory_size, sequence_length)`` as ``model.rnn`` (an LSTM whose h and c together are
    ``memory_size`` wide) and ``collect.unroll_len``."""
    memory = cfg.get('memory')
    if not memory:
        return
    size, length = memory.get('memory_size', 128), memory.get('sequence_length', 64)
    unknown = sorted(set(memory) - {'memory_size', 'sequence_length'})
    valid = isinstance(size, int) and size >= 2 and size % 2 == 0 and isinstance(length, int) and length >= 1
    if unknown or not valid:
        raise ConfigError(f"policy.memory={dict(memory)!r}: ML-Agents' keys are memory_size (an even int, the LSTM's "
                          f"h and c together) and sequence_length (an int >= 1)")
    if cfg.model.get('rnn') or cfg.collect.unroll_len != 1:
        raise ConfigError("policy.memory (ML-Agents' names) and policy.model.rnn / policy.collect.unroll_len say the "
                          "same thing: set one of them")
    cfg.model.rnn = EasyDict(type='lstm', hidden_size=size // 2)
    cfg.collect.unroll_len = length


def check_memory(cfg: EasyDict) -> None:
    """Sequences need a recurrent model (``model.rnn``) and a policy that learns from them; the replay buffer
    samples them (``unroll_len`` steps after ``burnin_step``)."""
    ml_agents_memory(cfg)
    rnn, unroll, burnin = cfg.model.get('rnn'), cfg.collect.unroll_len, cfg.get('burnin_step', 0)
    if not rnn:
        if unroll != 1 or burnin or not cfg.get('save_prev_state', True):
            raise ConfigError(f"policy.collect.unroll_len={unroll}, policy.burnin_step={burnin} and "
                              f"policy.save_prev_state={cfg.get('save_prev_state', True)} sample sequences, which "
                              f"only a recurrent model learns from: set policy.model.rnn=dict(type='lstm', "
                              f"hidden_size=...) or leave them 1, 0 and True")
        return
    if not (isinstance(unroll, int) and unroll >= 1 and isinstance(burnin, int) and burnin >= 0):
        raise ConfigError(f"policy.collect.unroll_len must be an int >= 1 and policy.burnin_step an int >= 0, "
                          f"got {unroll!r} and {burnin!r}")
    cfg.other.replay_buffer.update(sequence_length=unroll, burnin_step=burnin)


def check_signals(cfg: EasyDict) -> None:
    """Each reward signal known and its keys its own; the critics get one head per signal; the extrinsic gamma
    defaults to ``learn.discount_factor``."""
    signals = cfg.get('reward_signals')
    if (signals or cfg.get('behavioral_cloning')) and isinstance(cfg.model.get('obs_shape'), dict):
        raise ConfigError("policy.reward_signals and policy.behavioral_cloning read vector observations; this "
                          "model's are a Dict (images beside vectors)")
    cloning = cfg.get('behavioral_cloning')
    if cloning and not os.path.isfile(str(cloning.get('demo_path'))):
        raise ConfigError(f"policy.behavioral_cloning.demo_path={cloning.get('demo_path')!r}: no such file; give a "
                          f"file written by ding_lite -m collect_demo")
    rate = cfg.learn.get('reward_signal_steps_per_update')
    if rate is not None and not (signals and isinstance(rate, (int, float)) and rate > 0):
        raise ConfigError(f"policy.learn.reward_signal_steps_per_update={rate!r}: env steps per step of the reward "
                          f"models, a positive number, with policy.reward_signals set; leave it None otherwise")
    if not signals:
        return
    if 'extrinsic' in signals and 'gamma' not in (signals.extrinsic or {}):
        signals.extrinsic = EasyDict({**(signals.extrinsic or {}), 'gamma': cfg.learn.discount_factor})
    for name in signals:
        signal_config(name, signals[name])
    cfg.model.reward_heads = len(signals)


def check_optimiser_knobs(cfg: EasyDict, target_network: bool) -> None:
    """Coach's and ALF's knobs: weight decay per network, the initialiser, the interval between target updates."""
    learn = cfg.learn
    for key in ('weight_decay_q', 'weight_decay_policy'):
        if not learn[key] >= 0:
            raise ConfigError(f"policy.learn.{key}={learn[key]!r}: an L2 weight decay, a number >= 0")
    if cfg.model.get('init', 'default') not in INITIALISERS:
        raise ConfigError(f"policy.model.init={cfg.model.init!r}: expected one of {', '.join(INITIALISERS)}")
    freq = learn.target_update_freq
    if not (isinstance(freq, int) and freq >= 1):
        raise ConfigError(f"policy.learn.target_update_freq={freq!r}: learn steps per target update, an int >= 1")
    if freq > 1 and not target_network:
        raise ConfigError(f"policy.learn.target_update_freq={freq}: policy {cfg.type!r} has no target network; "
                          f"leave it 1")
    if freq > 1 and learn.cuda_graph:
        raise ConfigError(f"policy.learn.cuda_graph=True replays one update, but target_update_freq={freq} updates "
                          f"the target every {freq}th: set target_update_freq=1 or cuda_graph=False")


def check_reward_weights(cfg: EasyDict) -> None:
    """ALF's multi-dimensional reward: ``reward_weights`` a weight per dimension, ``learn.discount_factor`` one gamma
    or one per dimension; the critics get a head per dimension."""
    weights, gamma = cfg.get('reward_weights'), cfg.learn.discount_factor
    if weights is None:
        if isinstance(gamma, (list, tuple)):
            raise ConfigError(f"policy.learn.discount_factor={list(gamma)!r} is a gamma per reward dimension: set "
                              f"policy.reward_weights (one weight per dimension) too, or give one gamma")
        return
    weights = check_weights(weights)
    if isinstance(gamma, (list, tuple)):
        check_weights(list(gamma), len(weights), 'policy.learn.discount_factor')
        if not all(0 <= g <= 1 for g in gamma):
            raise ConfigError(f"policy.learn.discount_factor={list(gamma)!r}: each gamma in [0, 1]")
    cfg.reward_weights = weights
    cfg.model.reward_heads = len(weights)


def cloning_and_signals(cfg: EasyDict, discrete: bool, action_size: int, device: torch.device
                        ) -> tuple[BehaviouralCloning | None, SingleReward]:
    """``policy.behavioral_cloning``'s demonstrations and the critics' reward strategy: ``policy.reward_signals``'
    models or ``policy.reward_weights``' dimensions as heads where set, else the env's one reward."""
    obs = cfg.model.get('obs_shape')
    size = obs if isinstance(obs, int) else math.prod(obs) if isinstance(obs, (list, tuple)) else None
    bc = BehaviouralCloning(cfg.behavioral_cloning, size, discrete, cfg.learn.batch_size, device) \
        if cfg.get('behavioral_cloning') else None
    if cfg.get('reward_weights'):
        return bc, RewardVector(cfg.reward_weights, cfg.learn.discount_factor, device)
    return bc, RewardSignals(cfg.reward_signals, size, action_size, device) if cfg.get('reward_signals') else \
        SingleReward()


def init_actor_output(model: torch.nn.Module, init_w: float | None) -> torch.nn.Module:
    """``learn.init_w`` (DI-engine's): the actor's output layers' weights and biases uniform in ``[-init_w, init_w]``
    (None: as they are)."""
    if init_w is None:
        return model
    last = model.actor[-1] if isinstance(getattr(model, 'actor', None), torch.nn.Sequential) else None
    layers = [last.mu, last.log_sigma] if hasattr(last, 'log_sigma') else [last]
    if not all(isinstance(layer, torch.nn.Linear) for layer in layers):
        raise ConfigError(f"policy.learn.init_w={init_w} initialises the actor's output layers, which this "
                          f"{type(model).__name__} does not have as QAC models do (actor[-1]); leave it None")
    with torch.no_grad():
        for layer in layers:
            layer.weight.uniform_(-init_w, init_w)
            layer.bias.uniform_(-init_w, init_w)
    return model
