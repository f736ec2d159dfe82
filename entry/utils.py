"""Pieces shared by the pipelines: config input, env set-up, random collection."""
from __future__ import annotations

import os
import re
from functools import partial
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from easydict import EasyDict
from torch import nn

from ding_lite.config import ConfigError, compile_config, read_config, reward_clip_bounds
from ding_lite.data.collate import batch_len, default_collate
from ding_lite.worker import load_checkpoint
from ding_lite.worker.logger import build_logger
from ding_lite.worker.learner import LATEST
from envs import create_env_manager, get_vec_env_setting
from ding_lite.model import RunningObsNorm
from envs.adapt import adapted_env
from policy_zoo import Policy, create_policy, get_policy_cls


def compile_input(input_cfg: str | tuple | list, seed: int | None, **kwargs: Any) -> EasyDict:
    """Compile a config file path or a ``(main_config, create_config)`` pair (``seed`` None: the config's own;
    ``kwargs`` are ``compile_config``'s, ``overrides`` among them)."""
    if isinstance(input_cfg, str):
        input_cfg = read_config(input_cfg)
    if not (isinstance(input_cfg, (tuple, list)) and len(input_cfg) == 2):
        raise ConfigError(f"input_cfg must be a config file path or a (main_config, create_config) pair, "
                          f"got {type(input_cfg).__name__}")
    return compile_config(input_cfg[0], create_cfg=input_cfg[1], seed=seed, **kwargs)


def compile_run(input_cfg: str | tuple | list, seed: int | None, resume: bool | str,
                overrides: dict[str, Any] | None = None) -> tuple[EasyDict, str | None]:
    """The compiled config of a training run and, when resuming, the checkpoint to continue.

    A new run gets a fresh folder (``total_config.py`` written); a resumed one writes into the folder of the run it
    continues (``exp_name``'s, or the one holding the checkpoint ``resume`` names) and takes the seed its checkpoint
    records (a different ``seed`` is an error). ``overrides`` (``--set``) are applied, recorded in
    ``total_config.py`` and logged in ``log/summary.txt``.
    """
    if not resume:
        cfg = compile_input(input_cfg, seed, overrides=overrides)
        if overrides:
            build_logger(cfg.exp_name, 'summary', console=True).info(
                'overrides (--set): ' + ', '.join(f"{k}={v!r}" for k, v in overrides.items()))
        return cfg, None
    cfg = compile_input(input_cfg, seed, save_cfg=False, overrides=overrides)
    where = str(resume) if resume is not True else cfg.exp_name if seed is not None else _the_run(cfg.exp_name)
    path = find_resume_point(where)
    run_seed = load_checkpoint(path).get('run', {}).get('loop', {}).get('seed', cfg.seed)
    if seed is not None and seed != run_seed:
        raise ConfigError(f"--seed {seed} differs from the seed {run_seed} of the run being resumed ({path}); "
                          f"leave it out or give {run_seed}")
    if run_seed != cfg.seed:
        cfg = compile_input(input_cfg, run_seed, save_cfg=False, overrides=overrides)
    ckpt_dir = os.path.dirname(os.path.abspath(path))
    if resume is True:  # the run folder picked (the config's own, or the one seed-less --resume found)
        cfg.exp_name = where
    elif os.path.basename(ckpt_dir) == 'ckpt':  # a checkpoint path: the run folder that holds it
        cfg.exp_name = os.path.dirname(ckpt_dir)
    return cfg, path


def _the_run(exp_name: str) -> str:
    """The one run of a ``_seed<K>`` config that ``--resume`` without a seed continues: every seed's folder (and
    its timestamped siblings) with a resume point is a candidate; several are an error listing them."""
    runs = resumable_runs(exp_name)
    if len(runs) > 1:
        listed = '; '.join(f"{run} ({run_state(run)})" for run in runs)
        raise ConfigError(f"--resume without a seed: {len(runs)} runs of this config can be resumed: {listed}. Give "
                          f"the run's seed (-s K) or its folder (--resume FOLDER)")
    return runs[0] if runs else exp_name


def resumable_runs(exp_name: str) -> list[str]:
    """The folders of ``exp_name``'s runs that hold a complete resume point: for a ``<name>_seed<K>`` name every
    seed's (and the timestamped siblings ``compile_config`` makes), else ``exp_name``'s alone."""
    match = re.fullmatch(r'(.*_seed)\d+', exp_name)
    if match is None:
        return [exp_name] if os.path.isfile(os.path.join(exp_name, 'ckpt', LATEST)) else []
    parent, base = os.path.split(match.group(1))
    name = re.compile(re.escape(base) + r'\d+(_\d{6}_\d{6}_[0-9a-f]{4})?')
    folders = sorted(entry for entry in os.listdir(parent or '.') if name.fullmatch(entry))
    return [os.path.join(parent, f) for f in folders if os.path.isfile(os.path.join(parent, f, 'ckpt', LATEST))]


def run_state(run: str) -> str:
    """``'finished at env step N'`` or ``'interrupted at env step N'`` for a run folder with a resume point."""
    state = load_checkpoint(find_resume_point(run))
    envstep = state.get('last_envstep', 0)
    summary = os.path.join(run, 'log', 'summary.txt')
    lines = open(summary).read().splitlines() if os.path.isfile(summary) else []
    ends = [line for line in lines if re.search(r'\] (finished|interrupted) ', line)]
    finished = bool(ends) and '] finished ' in ends[-1] and f": {envstep} env steps," in ends[-1]
    return f"{'finished' if finished else 'interrupted'} at env step {envstep}"


def find_resume_point(where: str) -> str:
    """The checkpoint ``where`` names: a checkpoint file, or an experiment (or its ``ckpt``) folder, whose
    ``ckpt/latest`` names the newest complete checkpoint. Temp files a kill left behind are removed."""
    if os.path.isfile(where):
        return where
    ckpt_dir = where if os.path.basename(os.path.normpath(where)) == 'ckpt' else os.path.join(where, 'ckpt')
    latest = os.path.join(ckpt_dir, LATEST)
    if not os.path.isfile(latest):
        raise FileNotFoundError(f"nothing to resume: {latest} does not exist (no complete checkpoint of "
                                f"{where!r} was written yet); run without --resume to start a new run")
    with open(latest) as f:
        path = os.path.join(ckpt_dir, f.read().strip())
    if not os.path.isfile(path):
        raise FileNotFoundError(f"nothing to resume: {latest} names {path}, which does not exist")
    for name in os.listdir(ckpt_dir):
        if name.startswith('.') and name.endswith('.tmp'):
            os.remove(os.path.join(ckpt_dir, name))
    return path


def build_envs(cfg: EasyDict, env_setting: list | None = None, collect: bool = True) -> tuple[Any, Any]:
    """``(collector env manager or None, evaluator env manager)``, seeded as DI-engine does."""
    env_setting = env_setting or get_vec_env_setting(cfg.env)
    evaluator_env = build_env_manager(cfg, env_setting, 'evaluator', cfg.seed)
    collector_env = build_env_manager(cfg, env_setting, 'collector', cfg.seed) if collect else None
    return collector_env, evaluator_env


def build_env_manager(cfg: EasyDict, env_setting: list, which: str, seed: int) -> Any:
    """The ``'collector'`` (dynamic seeds from ``seed``) or ``'evaluator'`` (the same episodes each evaluation)
    env manager of ``env_setting`` = ``(env_fn, collector env cfgs, evaluator env cfgs)``."""
    env_fn, collector_cfgs, evaluator_cfgs = env_setting
    env_cfgs = collector_cfgs if which == 'collector' else evaluator_cfgs
    manager = create_env_manager(cfg.env.manager, [partial(adapted_env, env_fn, cfg=c) for c in env_cfgs])
    manager.seed(seed, dynamic_seed=which == 'collector')
    manager.info_metrics = list(cfg.env.get('info_metrics') or [])
    return manager


def create_run_policy(cfg: EasyDict, model: nn.Module | None = None,
                      enable_field: tuple[str, ...] | list[str] = ('learn', 'collect', 'eval')) -> Policy:
    """The run's policy. With ``env.norm_obs.use_norm`` its model carries a ``RunningObsNorm`` as ``obs_norm``, so
    the statistics go wherever the model's weights go (checkpoints, Ray actors, ``eval``)."""
    if model is not None:  # a model given to the pipeline: the policy's own initialisation, as a built one has
        model = get_policy_cls(cfg.policy).init_model(model, cfg.policy)
    norm = cfg.env.get('norm_obs') or {}
    if norm.get('use_norm'):
        shape = cfg.policy.model.get('obs_shape') or cfg.policy.model.get('agent_obs_shape')
        if isinstance(shape, (list, tuple)) and len(shape) == 1:
            shape = int(shape[0])
        if not isinstance(shape, int):
            raise ConfigError(f"env.norm_obs.use_norm=True normalises vector observations, but the model's "
                              f"obs_shape is {shape!r} (image pixels are scaled to [0, 1] by the conv encoder): "
                              f"set env.norm_obs.use_norm=False")
        model = model if model is not None else get_policy_cls(cfg.policy).create_model(cfg.policy)
        if not hasattr(model, 'obs_norm'):
            model.obs_norm = RunningObsNorm(shape, norm.get('clip', 10.0))
    return create_policy(cfg.policy, model=model, enable_field=enable_field)


def store(cfg: EasyDict, run: SimpleNamespace, batch: dict[str, Any]) -> None:
    """A collected batch into the run: its raw actions and rewards to the learner's histograms, rewards clipped
    (``env.reward_clip``) into the replay buffer, its observations into the policy's normaliser, where it has one
    (only collected data moves the statistics; evaluation never does)."""
    run.learner.observe_collected(batch['action'], batch['reward'])
    bounds = reward_clip_bounds(cfg.env.get('reward_clip'))
    if bounds is not None:
        batch = {**batch, 'reward': torch.as_tensor(batch['reward']).clamp(*bounds)}
    run.buffer.push(batch)
    norm = getattr(run.policy.model, 'obs_norm', None)
    if norm is not None:
        norm.update(torch.as_tensor(batch['obs']))


class RandomCollectPolicy:
    """Collect-mode stand-in that acts uniformly at random from the env's action space (warm-up data)."""

    def __init__(self, policy: SimpleNamespace, action_space: gym.Space, seed: int) -> None:
        self._policy, self._space = policy, action_space
        self._space.seed(seed)
        self.cfg = policy.cfg
        self.process_transition, self.get_train_sample = policy.process_transition, policy.get_train_sample
        self.plain_transition_keys = getattr(policy, 'plain_transition_keys', None)

    def forward(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, torch.Tensor]]:
        return {env_id: {'action': torch.as_tensor(self._space.sample())} for env_id in data}

    def forward_batch(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        """A random action per row, drawn as ``forward`` draws them (env order)."""
        return {'action': torch.as_tensor(np.stack([self._space.sample() for _ in range(batch_len(obs))]))}

    def reset(self, data_id: list[int] | None = None) -> None:
        pass


def collect_batch(collector: Any, n_sample: int, train_iter: int = 0) -> dict[str, Any]:
    """At least ``n_sample`` training samples as one batch for ``ReplayBuffer.push``: the collector's columnar
    ``collect_batch`` where it has one (a user's registered collector may offer only ``collect``)."""
    if hasattr(collector, 'collect_batch'):
        return collector.collect_batch(n_sample, train_iter=train_iter)
    return default_collate(collector.collect(n_sample, train_iter=train_iter), as_batch=False)


def random_collect(collector: Any, collect_policy: SimpleNamespace, n_sample: int, action_space: gym.Space,
                   seed: int) -> dict[str, Any]:
    """At least ``n_sample`` training samples (one batch) from uniform random actions (the warm-up before
    learning)."""
    collector.reset_policy(RandomCollectPolicy(collect_policy, action_space, seed))
    samples = collect_batch(collector, n_sample)
    collector.reset_policy(collect_policy)
    return samples


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
