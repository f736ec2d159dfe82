"""SQIL (arXiv:1905.11108) as a data change around any off-policy policy: half agent data with reward 0,
half demonstrations with reward 1, in every learn batch."""
from __future__ import annotations

from torch import nn

from ding_lite.config import ConfigError
from ding_lite.data import ReplayBuffer
from ding_lite.worker import create_serial_collector, load_checkpoint
from policy_zoo import Policy, create_policy
from .serial_entry import build_serial, load_demo_buffer, train_serial
from .utils import build_envs, compile_input, mixed_sampler


def serial_pipeline_sqil(input_cfg: str | tuple | list, expert_cfg: str | tuple | list | None = None, seed: int = 0,
                         expert_data_path: str | None = None, env_setting: list | None = None,
                         model: nn.Module | None = None, expert_model: nn.Module | None = None,
                         max_train_iter: int = int(1e10), max_env_step: int = int(1e10)) -> Policy:
    """Train with SQIL batches; demonstrations come from ``expert_data_path`` (a ``collect_demo_data`` file,
    preferred) or from an expert policy collecting online (``expert_cfg`` with ``policy.collect.model_path``)."""
    if (expert_data_path is None) == (expert_cfg is None):
        raise ValueError("serial_pipeline_sqil needs exactly one of expert_data_path (a demonstration file) "
                         "and expert_cfg (an expert policy collecting online)")
    cfg = compile_input(input_cfg, seed)
    run = build_serial(cfg, env_setting, model)
    after_collect = None
    if expert_data_path is not None:
        demos = load_demo_buffer(cfg, run, expert_data_path)
    else:
        demos, after_collect = _online_expert(expert_cfg, seed, cfg.policy.collect.n_sample, expert_model,
                                              cfg.policy.other.replay_buffer.replay_buffer_size)
    sample = mixed_sampler([(run.buffer, 0.5), (demos, 0.5)], rewards=(0.0, 1.0))
    train_serial(cfg, run, sample, max_train_iter, max_env_step, after_collect)
    return run.policy


def _online_expert(expert_cfg: str | tuple | list, seed: int, n_sample: int, model: nn.Module | None,
                   size: int) -> tuple[ReplayBuffer, object]:
    """DI-engine's way: a trained expert collects ``n_sample`` transitions beside the agent at every step."""
    cfg = compile_input(expert_cfg, seed, save_cfg=False)
    if not cfg.policy.collect.model_path:
        raise ConfigError("the expert config needs policy.collect.model_path (the expert's checkpoint)")
    expert = create_policy(cfg.policy, model=model, enable_field=['collect'])
    expert.collect_mode.load_state_dict(load_checkpoint(cfg.policy.collect.model_path))
    env, _ = build_envs(cfg, collect=True)
    collector = create_serial_collector(cfg.policy.collect.collector, env=env, policy=expert.collect_mode,
                                        exp_name=cfg.exp_name, instance_name='expert_collector')
    demos = ReplayBuffer({'replay_buffer_size': size})
    return demos, lambda: demos.push(collector.collect(n_sample))
