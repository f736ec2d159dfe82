"""The parts of a run that every pipeline builds alike: its envs, its policy, the warm-up's random actions, a collected
batch stored into it."""
from __future__ import annotations

import contextlib
from functools import partial
from types import SimpleNamespace
from typing import Any, Iterator

import gymnasium as gym
import numpy as np
import torch
from easydict import EasyDict
from torch import nn

from ding_lite.config import ConfigError, reward_clip_bounds
from ding_lite.data.collate import batch_len, default_collate
from envs import create_env_manager
from envs.agent_slots import AgentSlots
from envs.from_gym import vec_env_setting
from ding_lite.model import RunningObsNorm, RunningRewardNorm
from ding_lite.utils.curriculum import Curriculum, EpisodeParameters
from ding_lite.worker.collect_round import StepsTogether, collect_batches
from ding_lite.worker.episode_metrics import InfoStats
from envs.from_gym import adapted_env
from policy_zoo import Policy, get_policy_cls


def build_envs(cfg: EasyDict, env_setting: list | None = None, collect: bool = True) -> tuple[Any, Any]:
    """``(collector env manager or None, evaluator env manager)``, seeded as DI-engine does."""
    env_setting = vec_env_setting(cfg.env, env_setting)
    curriculum = Curriculum(cfg.env.get('environment_parameters'))  # one, whose lessons both managers' envs get
    evaluator_env = build_env_manager(cfg, env_setting, 'evaluator', cfg.seed, curriculum)
    collector_env = build_env_manager(cfg, env_setting, 'collector', cfg.seed, curriculum) if collect else None
    return collector_env, evaluator_env


def build_env_manager(cfg: EasyDict, env_setting: list, which: str, seed: int,
                      curriculum: Curriculum | None = None) -> Any:
    """The ``'collector'`` (dynamic seeds from ``seed``) or ``'evaluator'`` (the same episodes each evaluation)
    env manager of ``env_setting`` = ``(env_fn, collector env cfgs, evaluator env cfgs)``; with
    ``env.environment_parameters``, its episodes' values drawn from ``curriculum``'s lessons (a new one if None)."""
    env_fn, collector_cfgs, evaluator_cfgs = env_setting
    env_cfgs = collector_cfgs if which == 'collector' else evaluator_cfgs
    manager = create_env_manager(cfg.env.manager, [partial(adapted_env, env_fn, cfg=c) for c in env_cfgs])
    if getattr(env_fn, 'agent_slots', False):  # each agent of each env a slot of its own
        manager = AgentSlots(manager)
    manager.seed(seed, dynamic_seed=which == 'collector')
    manager.info_metrics = list(cfg.env.get('info_metrics') or [])
    manager.info_stats = InfoStats(cfg.env.info_stats) if cfg.env.get('info_stats') else None
    if cfg.env.get('environment_parameters'):  # the evaluator's draws a stream of their own
        manager.parameters = EpisodeParameters(curriculum or Curriculum(cfg.env.environment_parameters),
                                               seed + (0 if which == 'collector' else 1_000_003),
                                               cfg.env.get('environment_parameters_via', 'make'))
    return manager


def create_run_policy(cfg: EasyDict, model: nn.Module | None = None,
                      enable_field: tuple[str, ...] | list[str] = ('learn', 'collect', 'eval')) -> Policy:
    """The run's policy. With ``env.norm_obs.use_norm`` its model carries a ``RunningObsNorm`` as ``obs_norm``, with
    ``env.norm_reward.use_norm`` a ``RunningRewardNorm`` as ``reward_norm``, so the statistics go wherever the
    model's weights go (checkpoints, Ray actors, ``eval``)."""
    cls = get_policy_cls(cfg.policy)
    if model is not None:  # a model given to the pipeline: the policy's own initialisation, as a built one has
        model = cls.init_model(model, cfg.policy)
    norm = cfg.env.get('norm_obs') or {}
    if norm.get('use_norm') and cfg.policy.model.get('obs_norm'):
        raise ConfigError(f"env.norm_obs.use_norm=True with model {cfg.policy.model.get('type')!r}, which normalises "
                          f"observations itself (policy.model.obs_norm=True, SimBa's RSNorm), would normalise them "
                          f"twice: leave env.norm_obs off, or set policy.model.obs_norm=False to use env.norm_obs's")
    if norm.get('use_norm'):
        shape = cfg.policy.model.get('obs_shape') or cfg.policy.model.get('agent_obs_shape')
        if isinstance(shape, (list, tuple)) and len(shape) == 1:
            shape = int(shape[0])
        if not isinstance(shape, int):
            raise ConfigError(f"env.norm_obs.use_norm=True normalises vector observations, but the model's "
                              f"obs_shape is {shape!r} (image pixels are scaled to [0, 1] by the conv encoder): "
                              f"set env.norm_obs.use_norm=False")
        model = model if model is not None else cls.create_model(cfg.policy)
        if not hasattr(model, 'obs_norm'):
            model.obs_norm = RunningObsNorm(shape, norm.get('clip', 10.0))
    norm = cfg.env.get('norm_reward') or {}
    if norm.get('use_norm') and cfg.policy.model.get('reward_norm'):
        raise ConfigError(f"env.norm_reward.use_norm=True with model {cfg.policy.model.get('type')!r}, which scales "
                          f"rewards itself (policy.model.reward_norm=True, SimbaV2's), would scale them twice: leave "
                          f"env.norm_reward off, or set policy.model.reward_norm=False")
    if norm.get('use_norm'):
        model = model if model is not None else cls.create_model(cfg.policy)
        if not hasattr(model, 'reward_norm'):
            model.reward_norm = RunningRewardNorm(norm.get('clip', 10.0))
    return cls(cfg.policy, model=model, enable_field=enable_field)  # (create_policy would initialise it again)


def store(cfg: EasyDict, run: SimpleNamespace, batch: dict[str, Any], pushed: bool = False) -> None:
    """A collected batch into the run: its raw actions and rewards to the learner's histograms, rewards clipped
    (``env.reward_clip``) into the replay buffer (unless ``pushed`` there already: many seeds' batches in one push),
    its observations (and the collector's running returns) into the policy's normalisers, where it has them (only
    collected data moves the statistics; evaluation never does)."""
    run.learner.observe_collected(batch['action'], batch['reward'])
    returns = batch.get('running_return')  # the collector's, where rewards are normalised: not stored
    if returns is not None:
        batch = {k: v for k, v in batch.items() if k != 'running_return'}
    bounds = reward_clip_bounds(cfg.env.get('reward_clip'))
    if bounds is not None:
        batch = {**batch, 'reward': torch.as_tensor(batch['reward']).clamp(*bounds)}
    if not pushed:
        run.buffer.push(batch)
    norm = getattr(run.policy.model, 'obs_norm', None)
    if norm is not None:
        norm.update(torch.as_tensor(batch['obs']))
    norm = getattr(run.policy.model, 'reward_norm', None)
    if norm is not None:
        norm.update(torch.as_tensor(returns))


class RandomCollectPolicy:
    """Collect-mode stand-in that acts uniformly at random from the env's action space (warm-up data)."""

    BLOCK = 256  # a float Box's actions drawn at once (the values its ``sample`` gives call after call)

    def __init__(self, policy: SimpleNamespace, action_space: gym.Space, seed: int) -> None:
        self._policy, self._space = policy, action_space
        self._space.seed(seed)
        space = action_space
        self._uniform = isinstance(space, gym.spaces.Box) and space.dtype.kind == 'f' and space.is_bounded('both')
        self._block = np.empty((0, *space.shape), space.dtype) if self._uniform else None
        self._next = 0  # the block's first row not handed out
        self.cfg = policy.cfg
        self.process_transition, self.get_train_sample = policy.process_transition, policy.get_train_sample
        self.plain_transition_keys = getattr(policy, 'plain_transition_keys', None)
        self.memory = getattr(policy, 'memory', None)
        self.reward_weights = getattr(policy, 'reward_weights', None)

    def forward(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, torch.Tensor]]:
        """A random action per env; a recurrent policy's state advances as its own forward would advance it."""
        states = self._policy.forward(data, memory=kwargs['memory']) if kwargs.get('memory') else {}
        actions = self._draw(len(data)) if self._uniform else [self._space.sample() for _ in data]
        return {env_id: {'action': torch.as_tensor(action), **({'state': states[env_id]['state']} if states else {})}
                for env_id, action in zip(data, actions)}

    def forward_batch(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        """A random action per row, drawn as ``forward`` draws them (env order)."""
        state = {'state': self._policy.forward_batch(obs, memory=kwargs['memory'])['state']} \
            if kwargs.get('memory') else {}
        return {'action': torch.as_tensor(self._draw(batch_len(obs))), **state}

    def _draw(self, n: int) -> np.ndarray:
        """``n`` actions, the values ``n`` calls of the space's ``sample`` give: for a float Box bounded everywhere
        (its ``sample`` is ``uniform(low, high)``, ~10 us a call) rows of a block drawn ``BLOCK`` at a time, else a
        call per action."""
        space = self._space
        if not self._uniform:
            return np.stack([space.sample() for _ in range(n)])
        if self._next + n > len(self._block):
            fresh = space.np_random.uniform(space.low, space.high, (max(self.BLOCK, n), *space.shape))
            self._block, self._next = np.concatenate([self._block[self._next:], fresh.astype(space.dtype)]), 0
        self._next += n
        return self._block[self._next - n:self._next]

    def reset(self, data_id: list[int] | None = None) -> None:
        pass


def collect_batch(collector: Any, n_sample: int, train_iter: int = 0) -> dict[str, Any]:
    """At least ``n_sample`` training samples as one batch for ``ReplayBuffer.push``: the collector's columnar
    ``collect_batch`` where it has one (a user's registered collector may offer only ``collect``)."""
    if hasattr(collector, 'collect_batch'):
        return collector.collect_batch(n_sample, train_iter=train_iter)
    return default_collate(collector.collect(n_sample, train_iter=train_iter), as_batch=False)


def random_collect(collector: Any, collect_policy: SimpleNamespace, n_sample: int, env: Any,
                   seed: int) -> dict[str, Any]:
    """At least ``n_sample`` training samples (one batch) from uniform random actions in ``env``'s action space
    (an env with an agent axis: a row per agent), the warm-up before learning."""
    with _acting_at_random([collector], [collect_policy], [env], [seed]):
        return collect_batch(collector, n_sample)


def random_collect_together(collectors: list[Any], collect_policies: list[SimpleNamespace], n_sample: int,
                            envs: list[Any], seeds: list[int]) -> list[dict[str, Any]]:
    """``random_collect`` of plain collectors (``SampleSerialCollector``s) stepped together: the same samples,
    their envs stepping at once where they run in processes of their own, each step counted for all of them in one
    pass where they step alike."""
    with _acting_at_random(collectors, collect_policies, envs, seeds):
        return collect_batches(collectors, n_sample, together=StepsTogether(collectors))


@contextlib.contextmanager
def _acting_at_random(collectors: list[Any], collect_policies: list[SimpleNamespace], envs: list[Any],
                      seeds: list[int]) -> Iterator[None]:
    """Each collector acting uniformly at random in its env's action space (an env with an agent axis: a row per
    agent), then with its collect policy again."""
    for collector, policy, env, seed in zip(collectors, collect_policies, envs, seeds):
        space = getattr(getattr(env, 'env_ref', env), 'joint_action_space', None) or env.action_space
        collector.reset_policy(RandomCollectPolicy(policy, space, seed))
    try:
        yield
    finally:
        for collector, policy in zip(collectors, collect_policies):
            collector.reset_policy(policy)


def expert_mode(policy: Policy, deterministic: bool = True) -> SimpleNamespace:
    """A collect mode that acts as an expert: greedy / deterministic (the eval mode's actions), or, without
    ``deterministic``, sampled from the policy's own distribution with no exploration schedule (eps 0)."""
    collect, evaluate = policy.collect_mode, policy.eval_mode
    if deterministic:
        return SimpleNamespace(**dict(vars(collect), forward=evaluate.forward, forward_batch=evaluate.forward_batch,
                                      reset=evaluate.reset))
    kwargs = type(policy).plain_sample_kwargs
    batch = collect.forward_batch and (lambda obs, **kw: collect.forward_batch(obs, **{**kw, **kwargs}))
    return SimpleNamespace(**dict(vars(collect), forward=lambda data, **kw: collect.forward(data, **{**kw, **kwargs}),
                                  forward_batch=batch))
