"""``serial_pipeline_offline``: learn from a file of transitions with no env step (DI-engine's pipeline of that name,
ALF's offline replay), evaluating in the env at ``eval_freq``."""
from __future__ import annotations

import os
from typing import Any

from easydict import EasyDict
from torch import nn

from ding_lite.config import ConfigError, reward_clip_bounds
from ding_lite.data import ReplayBuffer
from ding_lite.data.buffer import BUFFER_KIND
from ding_lite.data.demo import DEMO_KIND
from ding_lite.utils.checkpoint import load_file
from policy_zoo import Policy
from ..kit.config_input import compile_run
from ..kit.cpu_threads import learner_threads
from ..kit.life_cycle import after_run, closing, graceful_interrupt, naming_resume_point, starting, summarise
from ..kit.steps import NO_LIMIT, already_finished, begin_run, buffer_settings, build_serial, load_demo_buffer


def serial_pipeline_offline(input_cfg: str | tuple | list, seed: int | None = None, env_setting: list | None = None,
                            model: nn.Module | None = None, max_train_iter: int = int(1e10),
                            resume: bool | str = False, overrides: dict[str, Any] | None = None) -> Policy:
    """Train the config's policy on ``policy.learn.data_path`` alone (DI-engine's signature, plus ``resume`` and
    ``overrides`` as ``serial_pipeline``'s): zero env steps; the evaluator runs at ``eval_freq`` iterations and
    once at the end, and checkpoints, resume points and ``evaluator.csv`` are written as in a serial run (its
    ``envstep`` column stays 0; tensorboard files evaluations by iteration). Returns the trained policy."""
    cfg, resume_path = compile_run(input_cfg, seed, resume, overrides, pipeline='offline')
    with starting(cfg, resume_path):  # a refusal leaves no run folder behind
        if cfg.policy.learn.learner.get('log_histograms'):
            raise ConfigError("policy.learn.learner.log_histograms=True draws the collected actions and rewards, and "
                              "-m offline collects none; leave it False")
        path = _data_path(cfg)
        run = build_serial(cfg, env_setting, model, save_cfg=resume_path is None)
    with closing(run):
        with starting(cfg, resume_path):
            data = offline_data(cfg, run.buffer, run.collector_env.env_ref, path)
            fit_to_data(cfg, run.policy, data)
            if hasattr(data, 'update'):  # prioritized: its priorities are the run's state, kept in resume points
                run.learner.attach('offline_data', data, buffer=True)
                run.learner.priority_buffer = data
            else:  # the data stays in its file: a resume reads it again
                run.learner.save_replay_buffer = False
            if resume_path:
                run.learner.resume(resume_path)
        train_offline(cfg, run, data, _epochs_budget(cfg, data) if max_train_iter >= NO_LIMIT else max_train_iter)
    return run.policy


def _epochs_budget(cfg: EasyDict, data: ReplayBuffer) -> int:
    """DI-engine's ``learn.train_epoch`` as learn steps (ceil(rows / batch_size) a pass; batches are drawn uniformly
    with replacement, not in passes), else no budget."""
    epochs = cfg.policy.learn.get('train_epoch')
    return epochs * -(-len(data) // cfg.policy.learn.batch_size) if epochs else NO_LIMIT


def _data_path(cfg: EasyDict) -> str:
    """The file to learn from: ``learn.data_path``, else DI-engine's ``collect.data_path``; refused if missing."""
    key = 'learn' if cfg.policy.learn.get('data_path') or not cfg.policy.collect.get('data_path') else 'collect'
    path = cfg.policy[key].get('data_path')
    if not path or not os.path.isfile(str(path)):
        raise ConfigError(f"policy.{key}.data_path={path!r}: serial_pipeline_offline learns from that file; give a "
                          f"demonstration file (ding_lite -m collect_demo) or a run's ckpt/*.buffer.pth.tar")
    return str(path)


def offline_data(cfg: EasyDict, buffer: ReplayBuffer, env: Any, path: str) -> ReplayBuffer:
    """The transitions of ``path`` in a buffer like ``buffer`` (its type, settings and device: prioritized where the
    run's is): a demonstration file (checked against the run's env and model), a replay buffer's state, or a resume
    point's buffer file (its ``replay_buffer``)."""
    state = load_file(path, 'offline data file')
    if isinstance(state, dict) and state.get('kind') == DEMO_KIND:
        return load_demo_buffer(cfg, buffer, env, path, like=True)
    if isinstance(state, dict) and 'replay_buffer' in state:
        state = state['replay_buffer']
    if not (isinstance(state, dict) and state.get('kind') == BUFFER_KIND and state.get('count')):
        raise ValueError(f"policy.learn.data_path={path!r} is neither a demonstration file nor a non-empty replay "
                         f"buffer file (ckpt/*.buffer.pth.tar)")
    obs, want = state['data'].get(('obs',)), cfg.policy.model.get('obs_shape')
    if isinstance(want, int) and obs is not None and tuple(obs.shape[1:]) != (want,):
        raise ValueError(f"{path} holds observations of shape {tuple(obs.shape[1:])}, but the model's obs_shape is "
                         f"{want}")
    data = type(buffer)({**buffer_settings(cfg), 'replay_buffer_size': int(state['count']),
                         'device': str(buffer.device)})
    data.load_state_dict(state, path)
    return data


def fit_to_data(cfg: EasyDict, policy: Policy, data: ReplayBuffer) -> None:
    """Offline data as a collected store would make it (d3rlpy's practice: normalisers fitted on the dataset once,
    before learning, and saved with the model): the observation normaliser fitted on its observations, the reward
    normaliser on its running returns, then its rewards clipped (``env.reward_clip``)."""
    fields = data.fields()
    norm = getattr(policy.model, 'obs_norm', None)
    if norm is not None:
        norm.update(fields[('obs',)])
    norm = getattr(policy.model, 'reward_norm', None)
    if norm is not None:
        norm.fit(fields[('reward',)], fields[('done',)], cfg.policy.learn.discount_factor,
                 fields.get(('episode_start',)))
    bounds = reward_clip_bounds(cfg.env.get('reward_clip'))
    if bounds is not None:
        data.transform(('reward',), lambda reward: reward.clamp(*bounds))


def train_offline(cfg: EasyDict, run: Any, data: ReplayBuffer, max_train_iter: int) -> None:
    """Learn steps on ``data`` until ``max_train_iter`` or the stop value, evaluating at ``eval_freq`` and at the
    end; Ctrl-C (or SIGTERM) stops at the next learn step with a resume point, then raises ``KeyboardInterrupt``."""
    learner, evaluator = run.learner, run.evaluator
    max_train_iter = begin_run(cfg, run, max_train_iter)

    def evaluate() -> bool:
        stop = evaluator.eval(learner.save_checkpoint, learner.train_iter, 0, tb_step=learner.train_iter)[0]
        learner.evaluated()
        return stop

    with graceful_interrupt() as interrupted, naming_resume_point(learner), learner_threads(cfg) as threads:
        stop = done = already_finished(cfg, run, 0, NO_LIMIT, max_train_iter)
        run.loop.ended = run.loop.ended if done else None
        while not done and learner.train_iter < max_train_iter and not interrupted.is_set():
            if evaluator.should_eval(learner.train_iter) and (stop := evaluate()):
                break
            learner.train(data.sample(cfg.policy.learn.batch_size), 0)
            threads.check()  # the serial pipeline's thread rule: one for small nets, the free cores else
        if not (stop or interrupted.is_set()) and evaluator.should_eval(learner.train_iter, at_end=True):
            evaluate()  # the trained policy's return
        if not (done or interrupted.is_set()):
            run.loop.ended = 'stop_value' if stop else 'budget'
        after_run(cfg, learner, interrupted.is_set())
    summarise(cfg, learner, 0, evaluator, interrupted=interrupted.is_set())
    if interrupted.is_set():
        raise KeyboardInterrupt
