"""Applications of a trained policy: evaluate it, or record demonstrations with it."""
from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
from torch import nn

from ding_lite.data import save_demo
from ding_lite.utils import set_pkg_seed
from ding_lite.worker import InteractionSerialEvaluator, SampleSerialCollector, load_checkpoint
from ..kit.capabilities import ACTING
from ..kit.config_input import compile_input
from ..kit.env_check import fit_model_to_env
from ..kit.run_parts import build_envs, create_run_policy, expert_mode


def eval(input_cfg: str | tuple | list, seed: int | None = None, env_setting: list | None = None,  # noqa: A001
         model: nn.Module | None = None, state_dict: dict | None = None, load_path: str | None = None,
         replay_path: str | None = None, n_episode: int | None = None,
         overrides: dict[str, Any] | None = None) -> float:
    """Run the config's evaluation episodes (``n_episode`` of them, if given) with weights from ``state_dict`` or
    the checkpoint ``load_path``; ``replay_path`` records each as a video (``<replay_path>/env<i>/``, the ``video``
    extra). Prints the returns' mean, std, min and max; returns the mean (also appended to ``evaluator.csv``).
    """
    if n_episode is not None and n_episode <= 0:
        raise ValueError(f"n_episode must be a positive number of episodes, got {n_episode}")
    cfg = compile_input(input_cfg, seed, save_cfg=False, overrides=overrides, pipeline=ACTING)
    if n_episode is not None:
        cfg.policy.eval.evaluator.n_episode = n_episode
    _, evaluator_env = build_envs(cfg, env_setting, collect=False)
    _last_lessons(evaluator_env)
    fit_model_to_env(cfg, evaluator_env, save=False)
    if replay_path is not None:
        evaluator_env.enable_save_replay(replay_path)
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    policy = create_run_policy(cfg, model=model, enable_field=['eval'])
    if state_dict is not None or load_path is not None:
        _load_weights(policy.eval_mode, cfg, state_dict, load_path)
    evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode,
                                           exp_name=cfg.exp_name, instance_name='eval')
    try:
        _, info = evaluator.eval()
    finally:
        with warnings.catch_warnings():  # the recorder's episode begun by the last reset has no frames: no video
            warnings.filterwarnings('ignore', message='.*Unable to save last video')
            evaluator.close()
    print(f"eval over {evaluator.n_episode} episodes: return mean {info['return_mean']:.2f} "
          f"std {info['return_std']:.2f} (min {info['return_min']:.2f}, max {info['return_max']:.2f})"
          f"{_by_agent(info)}")
    if replay_path is not None:
        print(f"videos: {', '.join(_video_folders(replay_path)) or 'none'}")
    return info['return_mean']


def _by_agent(info: dict[str, float]) -> str:
    """Many agents: each agent's mean return and each team's (``evaluator.csv``'s ``return_<agent>``,
    ``return_team_<team>``), as a line of their own each; nothing for one agent."""
    agents = {key[len('length_'):] for key in info if key.startswith('length_')}
    teams = {key[len('return_team_'):]: value for key, value in info.items() if key.startswith('return_team_')}
    lines = ["\n  per agent: " + ', '.join(f"{a} {info[f'return_{a}']:.2f}" for a in sorted(agents))] if agents else []
    lines += ["\n  per team: " + ', '.join(f"{t} {v:.2f}" for t, v in sorted(teams.items()))] if teams else []
    return ''.join(lines)


def _last_lessons(manager: Any) -> None:
    """A trained policy acts in the task its curriculum led to: every parameter's last lesson."""
    parameters = getattr(manager, 'parameters', None)
    if parameters is not None:
        parameters.curriculum.last_lessons()


def _video_folders(replay_path: str) -> list[str]:
    """The folders under ``replay_path`` that hold videos; those of envs that ran no episode are removed."""
    kept = []
    for name in sorted(os.listdir(replay_path)) if os.path.isdir(replay_path) else []:
        folder = os.path.join(replay_path, name)
        if os.path.isdir(folder) and not os.listdir(folder):
            os.rmdir(folder)
        elif os.path.isdir(folder):
            kept.append(folder)
    return kept


def collect_demo_data(input_cfg: str | tuple | list, seed: int | None, collect_count: int,
                      expert_data_path: str | None = None, env_setting: list | None = None,
                      model: nn.Module | None = None, state_dict: dict | None = None,
                      state_dict_path: str | None = None, deterministic: bool = True,
                      overrides: dict[str, Any] | None = None) -> dict:
    """Roll out a trained policy for ``collect_count`` transitions and write them to ``expert_data_path``.

    As DI-engine, the path defaults to ``policy.collect.save_path`` and the expert's checkpoint to
    ``policy.collect.state_dict_path`` or ``policy.learn.learner.load_path``. The expert acts greedily /
    deterministically (its eval mode); ``deterministic=False`` samples from its distribution with no exploration
    schedule. Returns the file header (fields, env id, count, episode-return statistics).
    """
    if collect_count <= 0:
        raise ValueError(f"collect_count must be positive, got {collect_count}")
    cfg = compile_input(input_cfg, seed, save_cfg=False, overrides=overrides, pipeline=ACTING)
    expert_data_path = expert_data_path or cfg.policy.collect.get('save_path')
    if not expert_data_path:
        raise ValueError("collect_demo_data needs expert_data_path (or policy.collect.save_path in the config)")
    if state_dict is None:
        state_dict_path = (state_dict_path or cfg.policy.collect.get('state_dict_path')
                           or cfg.policy.learn.learner.get('load_path'))
        if not state_dict_path:
            raise ValueError("collect_demo_data needs the expert's weights: state_dict, state_dict_path, or "
                             "policy.collect.state_dict_path in the config")
    collector_env, _ = build_envs(cfg, env_setting)
    _last_lessons(collector_env)
    fit_model_to_env(cfg, collector_env, save=False)
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    policy = create_run_policy(cfg, model=model, enable_field=['collect', 'eval'])
    _load_weights(policy.collect_mode, cfg, state_dict, state_dict_path)
    collector = SampleSerialCollector(cfg.policy.collect.collector, collector_env, expert_mode(policy, deterministic),
                                      exp_name=cfg.exp_name, instance_name='demo_collector')
    env_id = getattr(collector_env.env_ref, 'env_id', cfg.env.type)
    transitions = collector.collect(n_sample=collect_count)[:collect_count]
    collector.close()
    returns = [e['return'] for e in collector.finished_episodes]
    header = save_demo(expert_data_path, transitions, env_id=env_id,
                       policy=cfg.policy.type, deterministic=deterministic, seed=cfg.seed, episodes=len(returns),
                       return_mean=float(np.mean(returns)) if returns else float('nan'),
                       return_std=float(np.std(returns)) if returns else float('nan'))
    print(f"wrote {header['count']} transitions to {expert_data_path} ({len(returns)} complete episodes, "
          f"return mean {header['return_mean']:.2f})")
    return header


def _load_weights(mode: object, cfg: dict, state_dict: dict | None, path: str | None) -> None:
    """Load ``state_dict`` (or the checkpoint at ``path``) into a policy mode, with a clear error on a misfit."""
    state_dict = state_dict if state_dict is not None else load_checkpoint(path)
    try:
        mode.load_state_dict(state_dict)
    except (KeyError, RuntimeError) as error:
        raise ValueError(f"checkpoint {path or 'state_dict'} does not fit policy {cfg.policy.type!r} with model "
                         f"{dict(cfg.policy.model)}: {error}") from error
