"""SQIL (arXiv:1905.11108) as a data change around any off-policy policy: half agent data with reward 0,
half demonstrations with reward 1, in every learn batch."""
from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any, Callable

from easydict import EasyDict
from torch import nn

from ding_lite.config import ConfigError, ConfigWarning
from ding_lite.data import ReplayBuffer, mixed_sampler
from ding_lite.worker import create_serial_collector, load_checkpoint
from policy_zoo import Policy
from ..kit.env_check import fit_model_to_env
from ..kit.config_input import compile_input, compile_run
from ..kit.life_cycle import closing, starting
from ..kit.run_parts import build_envs, collect_batch, create_run_policy, expert_mode
from .seeds import train_seeds
from .single import train_serial
from ..kit.steps import build_serial, check_budget, load_demo_buffer


def serial_pipeline_sqil(input_cfg: str | tuple | list, expert_cfg: str | tuple | list | None = None,
                         seed: int | list[int] | None = None, expert_data_path: str | None = None,
                         env_setting: list | None = None, model: nn.Module | None = None,
                         expert_model: nn.Module | None = None, max_train_iter: int = int(1e10),
                         max_env_step: int = int(1e10), resume: bool | str = False,
                         overrides: dict[str, Any] | None = None) -> Policy | list[Policy]:
    """Train with SQIL batches; demonstrations come from ``expert_data_path`` (a ``collect_demo_data`` file,
    preferred) or from an expert policy acting greedily beside the agent (DI-engine's way: ``expert_cfg``, with
    the checkpoint at ``policy.collect.model_path`` of this config or of the expert config). ``resume`` as in
    ``serial_pipeline``, and so are ``overrides`` and a list of seeds (one policy per seed)."""
    if (expert_data_path is None) == (expert_cfg is None):
        raise ValueError("serial_pipeline_sqil needs exactly one of expert_data_path (a demonstration file) "
                         "and expert_cfg (an expert policy collecting online)")
    if isinstance(seed, (list, tuple, range)):
        def setup(cfg: EasyDict, run: SimpleNamespace, resume_path: str | None) -> tuple:
            return sqil_setup(cfg, run, resume_path, expert_cfg, expert_data_path, expert_model)
        return train_seeds(serial_pipeline_sqil, input_cfg, seed, setup, name='sqil', expert_cfg=expert_cfg,
                           expert_data_path=expert_data_path, env_setting=env_setting, model=model,
                           expert_model=expert_model, max_train_iter=max_train_iter, max_env_step=max_env_step,
                           resume=resume, overrides=overrides)
    cfg, resume_path = compile_run(input_cfg, seed, resume, overrides, pipeline='sqil', env_setting=env_setting)
    with starting(cfg, resume_path):
        run = build_serial(cfg, env_setting, model, save_cfg=resume_path is None)
    with closing(run):
        with starting(cfg, resume_path):
            check_budget(cfg, max_env_step)
            sample, after_collect = sqil_setup(cfg, run, resume_path, expert_cfg, expert_data_path, expert_model)
            if resume_path:
                run.learner.resume(resume_path)
        train_serial(cfg, run, sample, max_train_iter, max_env_step, after_collect)
    return run.policy


def sqil_setup(cfg: EasyDict, run: SimpleNamespace, resume_path: str | None, expert_cfg: str | tuple | list | None,
               expert_data_path: str | None, expert_model: nn.Module | None = None,
               ) -> tuple[Callable[[int], Any], Callable[[], None] | None]:
    """``(sample, after_collect)`` of a SQIL run: batches half agent data (reward 0), half demonstrations (reward
    1), from the file ``expert_data_path`` or from an expert collecting beside the agent after each collect."""
    if expert_data_path is not None:
        demos = load_demo_buffer(cfg, run.buffer, run.collector_env.env_ref, expert_data_path)
        after_collect = None
        if cfg.policy.get('expert_random_collect_size'):
            warnings.warn('policy.expert_random_collect_size is ignored: the demonstrations come from a file',
                          ConfigWarning, stacklevel=3)
    else:
        demos, after_collect = _online_expert(cfg, expert_cfg, expert_model, run, resume_path)
    return mixed_sampler([(run.buffer, 0.5), (demos, 0.5)], rewards=(0.0, 1.0)), after_collect


def _online_expert(cfg: EasyDict, expert_cfg: str | tuple | list, model: nn.Module | None,
                   run: SimpleNamespace, resume_path: str | None) -> tuple[ReplayBuffer, Callable[[], None]]:
    """A trained expert acting greedily beside the agent: ``n_sample`` transitions per agent collect, after
    ``expert_random_collect_size`` up front. Returns the demonstration buffer and the per-collect callback."""
    expert = compile_input(expert_cfg, cfg.seed, save_cfg=False)
    model_path = cfg.policy.collect.model_path or expert.policy.collect.model_path  # DI-engine reads the first
    if not model_path:
        raise ConfigError("the online SQIL expert needs its checkpoint: set policy.collect.model_path (in the SQIL "
                          "config, where DI-engine reads it, or in the expert config)")
    env, _ = build_envs(expert, collect=True)
    run.closables.append(env)
    fit_model_to_env(expert, env, save=False)
    policy = create_run_policy(expert, model=model, enable_field=['collect', 'eval'])
    policy.collect_mode.load_state_dict(load_checkpoint(model_path))
    collector = create_serial_collector(expert.policy.collect.collector, env=env, policy=expert_mode(policy),
                                        exp_name=cfg.exp_name, instance_name='expert_collector')
    run.closables.append(collector)
    demos = ReplayBuffer({'replay_buffer_size': cfg.policy.other.replay_buffer.replay_buffer_size,
                          'device': str(run.buffer.device)})
    run.learner.attach('expert_collector', collector)
    run.learner.attach('expert_buffer', demos, buffer=True)
    if cfg.policy.get('expert_random_collect_size') and resume_path is None:
        demos.push(collect_batch(collector, cfg.policy.expert_random_collect_size))
    return demos, lambda: demos.push(collect_batch(collector, cfg.policy.collect.n_sample))
