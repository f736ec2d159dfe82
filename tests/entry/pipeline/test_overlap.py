"""Collection overlapped with learning (``policy.collect.overlap``): the transitions stored are the env's own, a
resume continues exactly, and what it cannot run with is refused before anything is collected."""
from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_lite.config import ConfigError
from ding_lite.utils import load_file
from ding_lite.worker import NonFiniteEnvError
from entry import serial_pipeline
from entry.kit.config_input import compile_run
from entry.kit.life_cycle import closing
from entry.kit.run_parts import create_run_policy
from entry.pipeline.single import train_serial
from entry.kit.steps import build_serial
from tests.conftest import TINY_CREATE, TINY_PENDULUM
from tests.entry.pipeline.test_resume import _cfg, _crash_at, _returns, _same_params

EPISODE = 7


class CounterEnv(gym.Env):
    """obs = [t, episode tag]; reward = t + action; terminated at t = 7. Every transition shows its own source."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, nan_after: int | None = None) -> None:
        self._nan_after, self._steps = nan_after, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t, self._tag = 0, float(self.np_random.integers(1 << 20)) / 1e5
        return np.array([0.0, self._tag], np.float32), {}

    def step(self, action):
        reward = self._t + float(action[0])
        self._t, self._steps = self._t + 1, self._steps + 1
        if self._nan_after is not None and self._steps > self._nan_after:
            reward = float('nan')
        return np.array([self._t, self._tag], np.float32), reward, self._t == EPISODE, False, {}


gym.register('OverlapCounter-v0', entry_point=CounterEnv)


def _counter_cfg(tmp_path) -> tuple[EasyDict, EasyDict]:
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / 'counter')
    main.env.update(env_id='OverlapCounter-v0', env_kwargs={}, collector_env_num=3)
    main.policy.model.obs_shape = 2
    main.policy.collect.overlap = True
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.env.type = 'gymnasium'
    return main, create


def test_overlapped_rounds_store_exactly_the_envs_transitions_in_order(tmp_path):
    cfg, _ = compile_run(_counter_cfg(tmp_path), 0, False, None)
    with closing(build_serial(cfg)) as run:
        train_serial(cfg, run, run.buffer.sample, max_train_iter=40, max_env_step=int(1e9))
        assert run.collector._child is not None  # the learning phase collected in the child
        data = {k[0]: v[:run.buffer.count()] for k, v in run.buffer._storage.items()}
    obs, next_obs, action, reward, done = (data[k].numpy() for k in ('obs', 'next_obs', 'action', 'reward', 'done'))
    assert len(obs) == run.collector.envstep > 40 * cfg.policy.collect.n_sample
    np.testing.assert_array_equal(next_obs[:, 0], obs[:, 0] + 1)                # each row one env step
    np.testing.assert_array_equal(next_obs[:, 1], obs[:, 1])
    np.testing.assert_allclose(reward, obs[:, 0] + action[:, 0], rtol=1e-6)     # the reward of that action
    np.testing.assert_array_equal(done, next_obs[:, 0] == EPISODE)
    for tag in np.unique(obs[:, 1]):                                            # each episode whole, in order
        steps = obs[obs[:, 1] == tag, 0]
        np.testing.assert_array_equal(steps, np.arange(len(steps)))


def test_an_error_in_the_collecting_process_is_raised_in_the_run(tmp_path):
    main, create = _counter_cfg(tmp_path)
    main.env.env_kwargs = dict(nan_after=30)  # past the warm-up: in the child process
    with pytest.raises(NonFiniteEnvError, match=r"returned a non-finite reward at env step \d+"):
        serial_pipeline((main, create), seed=0, max_train_iter=100)


@pytest.mark.parametrize('overlap', [True, 'stream'])
def test_overlapped_resume_mid_round_matches_the_uninterrupted_run_exactly(tmp_path, monkeypatch, overlap):
    def cfg(name):
        main, create = _cfg(tmp_path / name)
        main.policy.collect.overlap = overlap
        return main, create
    straight = serial_pipeline(cfg('straight'), seed=0, max_train_iter=60)
    with monkeypatch.context() as patch:
        _crash_at(patch, 23)   # a round in flight in the child when iteration 21's checkpoint is written
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline(cfg('crashed'), seed=0, max_train_iter=60)
    state = load_file(str(tmp_path / 'crashed' / 'ckpt' / 'iteration_21.pth.tar'))
    if overlap is True:
        assert state['run']['collector']['overlap']['pending']['steps'] == 4    # the round in flight, kept
    else:  # the weights the next round acts with: the learner's from before this round
        snapshot = state['run']['collector']['policy']['snapshot']
        assert not torch.equal(snapshot['actor.0.0.weight'], state['model']['actor.0.0.weight'])
    resumed = serial_pipeline(cfg('crashed'), seed=0, max_train_iter=60, resume=True)
    assert _same_params(straight, resumed)
    assert _returns(tmp_path / 'crashed') == _returns(tmp_path / 'straight')


@pytest.mark.parametrize('overlap', [True, 'stream'])
def test_overlap_acts_one_round_behind_the_learner(tmp_path, overlap):
    """Not the strict run: the rounds collected while the learner trains act with the weights from before."""
    def run(overlap, name):
        main, create = _cfg(tmp_path / name)
        main.policy.collect.overlap = overlap
        return serial_pipeline((main, create), seed=0, max_train_iter=30)
    strict, overlapped = run(False, 'strict'), run(overlap, 'overlapped')
    assert not _same_params(strict, overlapped)
    for a, b in zip(strict.model.parameters(), overlapped.model.parameters()):
        torch.testing.assert_close(a, b, rtol=0.5, atol=0.05)   # the same learning, a round apart


def test_acting_from_a_snapshot_uses_the_weights_of_its_last_refresh(tiny_pendulum):
    """``overlap='stream'``'s collect forward: the snapshot's weights and observation statistics, not the live ones,
    until ``refresh_snapshot``; its noise as the live forward draws it."""
    main, create = tiny_pendulum
    main.env.norm_obs = dict(use_norm=True)
    cfg, _ = compile_run((main, create), 0, False, None)
    policy = create_run_policy(cfg)
    policy.act_from_snapshot()
    obs = torch.randn(4, 3)
    policy.model.obs_norm.update(obs * 3 + 1)
    before = policy.collect_mode.forward_batch(obs)['logit']
    with torch.no_grad():
        for p in policy.model.actor.parameters():
            p.add_(0.1)
    torch.testing.assert_close(policy.collect_mode.forward_batch(obs)['logit'], before, rtol=0, atol=0)
    policy.refresh_snapshot()
    live = policy.eval_mode.forward_batch(obs)  # eval reads the live model: its mean is the snapshot's now
    after = policy.collect_mode.forward_batch(obs)['logit']
    assert not torch.equal(after, before)
    torch.testing.assert_close(after[:, 0].tanh(), live['action'], rtol=1e-6, atol=1e-6)


def test_overlap_refuses_a_manager_it_cannot_fork_before_collecting(tmp_path):
    main, create = _cfg(tmp_path / 'refused', manager='subprocess')
    main.policy.collect.overlap = True
    with pytest.raises(ConfigError, match="needs env_manager type 'base'.*, got 'subprocess'.*or 'stream'"):
        serial_pipeline((main, create), seed=0, max_train_iter=5)
    assert not (tmp_path / 'refused' / 'ckpt').exists()
