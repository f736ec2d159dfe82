from __future__ import annotations

import csv
import os
from functools import partial

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import ReplayBuffer
from ding_lite.worker import (BaseLearner, EpisodeSerialCollector, InteractionSerialEvaluator, SampleSerialCollector,
                              load_checkpoint)
from envs import BaseEnvManager, PendulumEnv
from policy_zoo import SACPolicy


@pytest.fixture
def setup(tiny_pendulum):
    cfg = compile_config(*tiny_pendulum, save_cfg=False)
    policy = SACPolicy(cfg.policy)
    return cfg, policy


def _manager(n, steps=20, seed=0, dynamic=True):
    manager = BaseEnvManager([partial(PendulumEnv, {'env_kwargs': {'max_episode_steps': steps}})] * n)
    manager.seed(seed, dynamic)
    return manager


def test_sample_collector_counts_and_time_limit_done_is_false(setup):
    cfg, policy = setup
    collector = SampleSerialCollector(cfg.policy.collect.collector, _manager(2, steps=3), policy.collect_mode,
                                      exp_name=cfg.exp_name)
    data = collector.collect(n_sample=7)
    assert len(data) == 8 and collector.envstep == 8        # whole rounds of 2 envs: at least n_sample
    assert all(t['done'] is False for t in data)            # Pendulum only truncates: always bootstrap
    assert all(abs(float(t['action'])) <= 1 for t in data)
    # each env's transitions chain: next_obs of step k is obs of step k+1 within an episode
    env0 = data[0::2]
    assert torch.allclose(torch.as_tensor(env0[0]['next_obs']), torch.as_tensor(env0[1]['obs']))
    buffer = ReplayBuffer({'replay_buffer_size': 100})
    buffer.push(data)
    assert buffer.count() == 8
    with pytest.raises(ValueError, match='positive n_sample'):
        collector.collect(n_sample=0)


def test_episode_metrics_are_the_discounted_return_and_the_reward_per_step_by_hand(setup):
    cfg, policy = setup
    policy.collect_mode.cfg.learn.discount_factor = 0.9
    for columnar in (True, False):  # the columnar path and the per-env one
        collector = SampleSerialCollector(cfg.policy.collect.collector, _manager(2, steps=4), policy.collect_mode,
                                          exp_name=cfg.exp_name)
        if not columnar:
            collector._columnar_keys = lambda: None
        data = collector.collect(n_sample=8)
        rewards = [float(t['reward']) for t in data[0::2]]                     # env 0's one episode, in order
        (episode, _) = [e for e in collector.finished_episodes]
        assert episode['discounted_return'] == pytest.approx(sum(0.9 ** t * r for t, r in enumerate(rewards)))
        assert episode['reward_per_step'] == pytest.approx(sum(rewards) / 4)
        assert episode['reward_per_step'] == pytest.approx(episode['return'] / 4)
    manager, seen = _manager(2, steps=4), {0: [], 1: []}
    step_batch = manager.step_batch  # the evaluator's path for envs that step as columns

    def spied(ids, actions):
        step = step_batch(ids, actions)
        for env_id, reward in zip(step.env_id, step.reward.tolist()):
            seen[env_id].append(reward)
        return step
    manager.step_batch = spied
    policy.eval_mode.cfg.learn.discount_factor = 0.5
    evaluator = InteractionSerialEvaluator(dict(cfg.policy.eval.evaluator, n_episode=2), manager, policy.eval_mode,
                                           exp_name=None)
    returns = evaluator.run_episodes()
    for env_id, (ret, metrics) in enumerate(zip(returns, evaluator.episode_metrics)):
        assert metrics['discounted_return'] == pytest.approx(sum(0.5 ** t * r for t, r in enumerate(seen[env_id])))
        assert metrics['reward_per_step'] == pytest.approx(ret / 4)


def test_episode_collector_returns_whole_episodes(setup):
    cfg, policy = setup
    collector = EpisodeSerialCollector({'type': 'episode'}, _manager(2, steps=5), policy.collect_mode,
                                       exp_name=cfg.exp_name)
    episodes = collector.collect(n_episode=3)
    assert len(episodes) >= 3 and all(len(e) == 5 for e in episodes)
    assert collector.envstep == 10 * ((len(episodes) + 1) // 2)


def test_learner_logs_checkpoints_and_resumes(setup):
    cfg, policy = setup
    data = [{'obs': torch.randn(3), 'action': torch.rand(1), 'reward': 0.0, 'next_obs': torch.randn(3), 'done': False}
            for _ in range(16)]
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name=cfg.exp_name)
    for _ in range(10):
        learner.train(data, envstep=123)
    assert learner.train_iter == 10 and set(learner.last_log) >= {'critic_loss', 'policy_loss', 'alpha'}
    ckpt = os.path.join(cfg.exp_name, 'ckpt', 'iteration_10.pth.tar')
    assert os.path.isfile(ckpt)
    text = open(os.path.join(cfg.exp_name, 'log', 'learner.txt')).read()
    assert 'iter 5 envstep 123' in text and 'iter 10 ' in text and 'critic_loss' in text
    state = load_checkpoint(ckpt)
    assert state['last_iter'] == 10
    resumed_cfg = cfg.policy.learn.learner
    resumed_cfg.hook.load_ckpt_before_run = ckpt
    other = SACPolicy(cfg.policy)
    resumed = BaseLearner(resumed_cfg, other.learn_mode, exp_name=cfg.exp_name)
    resumed.call_hook('before_run')
    assert resumed.train_iter == 10 and resumed.last_envstep == 123
    torch.testing.assert_close(other._model.actor[1].mu.weight, policy._model.actor[1].mu.weight)


def test_checkpoint_errors(tmp_path, setup):
    cfg, policy = setup
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name=cfg.exp_name)
    with pytest.raises(FileNotFoundError, match='checkpoint not found'):
        learner.load_checkpoint(str(tmp_path / 'none.pth.tar'))
    truncated = tmp_path / 'cut.pth.tar'
    good = learner.save_checkpoint('good.pth.tar')
    truncated.write_bytes(open(good, 'rb').read()[:100])
    with pytest.raises(ValueError, match='not a readable torch file'):
        learner.load_checkpoint(str(truncated))
    torch.save({'weights': 1}, tmp_path / 'foreign.pth')
    with pytest.raises(ValueError, match='not a ding_lite checkpoint'):
        learner.load_checkpoint(str(tmp_path / 'foreign.pth'))
    bigger = compile_config(*_bigger_cfg(cfg), save_cfg=False)
    mismatch = BaseLearner(cfg.policy.learn.learner, SACPolicy(bigger.policy).learn_mode, exp_name=cfg.exp_name)
    with pytest.raises(ValueError, match="does not fit this policy's learn state"):
        mismatch.load_checkpoint(good)


def _bigger_cfg(cfg):
    from tests.conftest import TINY_CREATE, TINY_PENDULUM
    import copy
    main = copy.deepcopy(TINY_PENDULUM)
    main['exp_name'] = cfg.exp_name
    main['policy']['model']['critic_head_hidden_size'] = 32
    return main, TINY_CREATE


def test_evaluator_spreads_episodes_writes_csv_and_best(setup):
    cfg, policy = setup
    evaluator_cfg = dict(cfg.policy.eval.evaluator, n_episode=3, stop_value=-1e9, eval_freq=10)
    evaluator = InteractionSerialEvaluator(evaluator_cfg, _manager(2, steps=6, dynamic=False), policy.eval_mode,
                                           exp_name=cfg.exp_name)
    assert evaluator._episode_quota() == {0: 2, 1: 1}
    assert evaluator.should_eval(0) and not evaluator.should_eval(0)
    assert not evaluator.should_eval(9) and evaluator.should_eval(10)
    saved = []
    stop, info = evaluator.eval(saved.append, train_iter=10, envstep=500)
    assert stop and saved == ['ckpt_best.pth.tar']
    returns = evaluator.run_episodes()
    assert len(returns) == 3 and len({round(r, 6) for r in returns}) == 3  # env 0's second episode is a new start
    assert evaluator.run_episodes() == pytest.approx(returns)               # and every evaluation the same ones
    evaluator.eval(saved.append, train_iter=20, envstep=900)
    assert saved == ['ckpt_best.pth.tar']                  # same return: not a new best
    rows = list(csv.DictReader(open(evaluator.csv_path)))
    assert [r['train_iter'] for r in rows] == ['10', '20'] and rows[0]['envstep'] == '500'
    assert float(rows[0]['return_mean']) == pytest.approx(info['return_mean'], rel=1e-5)
    assert list(rows[0]) == ['train_iter', 'envstep', 'wall_time', 'return_mean', 'return_std', 'return_min',
                             'return_max', 'discounted_return', 'reward_per_step']   # ALF's metrics beside it


def test_learner_hooks_in_di_engine_form(setup):
    from ding_lite.worker import LearnerHook, add_learner_hook, create_learner
    cfg, policy = setup
    calls = []

    class Record(LearnerHook):
        def __call__(self, engine):
            calls.append((self.name, engine.train_iter, engine.last_iter.val))

    learner = create_learner(cfg.policy.learn.learner, policy=policy.learn_mode, exp_name=cfg.exp_name)
    assert isinstance(learner, BaseLearner) and cfg.policy.learn.learner.type == 'base'
    learner.register_hook(Record('late', 50, position='after_iter'))
    learner.register_hook(Record('early', 5, position='after_iter'))
    learner.register_hook(Record('before', position='before_iter'))
    learner.register_hook(Record('start', position='before_run'))
    learner.call_hook('before_run')
    data = [{'obs': torch.randn(3), 'action': torch.rand(1), 'reward': 0.0, 'next_obs': torch.randn(3),
             'done': False}] * 16
    learner.train(data)
    assert calls == [('start', 0, 0), ('before', 0, 0), ('early', 1, 1), ('late', 1, 1)]
    names = [hook.name for hook in learner.hooks['after_iter']]
    assert names.index('early') < names.index('log_show_after_iter') < names.index('late')  # built-ins: 20
    hooks = {position: [] for position in LearnerHook.positions}
    add_learner_hook(hooks, Record('b', 10, position='after_run'))
    add_learner_hook(hooks, Record('a', 10, position='after_run'))         # equal priority: after, as DI-engine
    assert [h.name for h in hooks['after_run']] == ['b', 'a']
    with pytest.raises(ValueError, match="position 'after_everything'"):
        Record('x', position='after_everything')


def test_partial_worker_configs_keep_their_defaults(setup):
    cfg, policy = setup
    learner = BaseLearner({'hook': {'save_ckpt_after_iter': 3}}, policy.learn_mode, exp_name=cfg.exp_name)
    assert learner._cfg.hook.log_show_after_iter == 100 and learner._cfg.hook.save_ckpt_after_run
    collector = SampleSerialCollector({'type': 'sample'}, _manager(1), policy.collect_mode, exp_name=cfg.exp_name)
    assert collector._cfg.collect_print_freq == 100
    manager = BaseEnvManager([partial(PendulumEnv, {})], {'max_retry': 3})
    assert manager._cfg.auto_reset and manager._cfg.max_retry == 3


def test_learner_logs_the_mean_of_each_statistic_since_the_last_log(setup):
    cfg, _ = setup

    class Scripted:  # learn_mode stand-in returning known statistics; the output's own tensors must stay as given
        def __init__(self):
            self.outputs = []

        def forward(self, data):
            i = float(len(self.outputs))
            self.outputs.append({'loss': torch.tensor(i), 'q_value': torch.tensor(10 * i), 'priority': torch.ones(2)})
            return self.outputs[-1]

        monitor_vars = staticmethod(lambda: ['loss', 'q_value'])
        state_dict = staticmethod(lambda: {})
        load_state_dict = staticmethod(lambda state: None)

    mode = Scripted()
    learner = BaseLearner(cfg.policy.learn.learner, mode, exp_name=cfg.exp_name)
    for _ in range(3):
        learner.train({})
    assert learner.log() == {'loss': 1.0, 'q_value': 10.0}
    learner.train({})
    assert learner.log() == {'loss': 3.0, 'q_value': 30.0}
    assert [float(o['loss']) for o in mode.outputs] == [0.0, 1.0, 2.0, 3.0]   # summed into copies, not in place


def test_timed_resume_points_come_every_interval_and_take_at_most_a_twentieth_of_the_time(monkeypatch):
    import ding_lite.worker.learner_hook as learner_hook
    clock = {'now': 0.0}
    monkeypatch.setattr(learner_hook.time, 'monotonic', lambda: clock['now'])
    saves = []

    class Engine:
        def save_checkpoint(self, name, resume_point=False):
            saves.append((clock['now'], name, resume_point))
            clock['now'] += self.write_seconds

    engine, hook = Engine(), learner_hook.TimedResumePoint(60)
    engine.write_seconds = 0.5
    for now in (30, 59.9, 60, 90, 120.4, 180.5):
        clock['now'] = now
        hook(engine)
    assert saves == [(60, 'ckpt_last.pth.tar', True), (120.4, 'ckpt_last.pth.tar', True),
                     (180.5, 'ckpt_last.pth.tar', True)]
    engine.write_seconds = 10.0  # a large buffer: the next write waits 20 writes' time, not 60 s
    for now in (250, 400, 450):
        clock['now'] = now
        hook(engine)
    assert [t for t, _, _ in saves[3:]] == [250, 450]
    assert 'save_ckpt_after_seconds' in [h.name for h in BaseLearner(None).hooks['after_iter']]  # on by default


class _NanAt(PendulumEnv):
    """Pendulum whose observation is NaN at its third step of every episode."""

    def reset(self):
        self._t = 0
        return super().reset()

    def step(self, action):
        timestep = super().step(action)
        self._t += 1
        return timestep._replace(obs=timestep.obs * float('nan')) if self._t == 3 else timestep


def test_evaluator_stops_at_a_non_finite_observation_or_drops_that_episode(setup):
    from ding_lite.worker import NonFiniteEnvError
    cfg, policy = setup
    fns = [partial(PendulumEnv, {'env_kwargs': {'max_episode_steps': 6}}),
           partial(_NanAt, {'env_kwargs': {'max_episode_steps': 6}})]
    manager = BaseEnvManager(fns)
    manager.seed(0, False)
    evaluator = InteractionSerialEvaluator(dict(cfg.policy.eval.evaluator, n_episode=2), manager, policy.eval_mode,
                                           exp_name=cfg.exp_name)
    with pytest.raises(NonFiniteEnvError, match=r"evaluator env .*\(env 1\) returned a non-finite next_obs in an "
                                                 r"evaluation"):
        evaluator.run_episodes()
    evaluator.on_nonfinite = 'skip'
    with pytest.raises(RuntimeError, match='evaluation cannot finish'):  # env 1 never ends a clean episode
        evaluator.run_episodes()


class _NaNEveryThird(PendulumEnv):
    """Pendulum whose every third step returns a NaN reward."""

    def step(self, action):
        timestep = super().step(action)
        self._calls = getattr(self, '_calls', 0) + 1
        return timestep._replace(reward=float('nan')) if self._calls % 3 == 0 else timestep


def test_the_list_api_checks_each_step_once_and_still_names_or_drops_a_bad_transition(setup):
    """DI-engine's ``collect()`` checks every field of all envs at once per step, and a step with a NaN still
    raises naming the env and field, or with ``on_nonfinite='skip'`` drops just that transition."""
    from ding_lite.worker import NonFiniteEnvError
    cfg, policy = setup
    make = lambda: BaseEnvManager([partial(_NaNEveryThird, {'env_kwargs': {'max_episode_steps': 20}})] * 2)  # noqa
    collector = SampleSerialCollector(cfg.policy.collect.collector, make(), policy.collect_mode, exp_name=cfg.exp_name)
    with pytest.raises(NonFiniteEnvError, match=r"env .*\(env [01]\) returned a non-finite reward .*reward=nan"):
        collector.collect(n_sample=8)
    collector = SampleSerialCollector(cfg.policy.collect.collector, make(), policy.collect_mode, exp_name=cfg.exp_name,
                                      on_nonfinite='skip')
    data = collector.collect(n_sample=12)
    assert collector.nonfinite_dropped == 4 and len(data) == 12  # 8 steps of each env, 2 of them NaN
    assert all(torch.isfinite(torch.as_tensor(t['reward'])).all() for t in data)


def test_the_row_check_flags_just_the_rows_holding_a_nan_or_an_infinity():
    """``nonfinite_rows``: huge finite values (whose sum would overflow) flag nothing, and a NaN or an infinity in any
    float field flags only its row."""
    import numpy as np
    from ding_lite.worker.finite_check import nonfinite_rows
    big = np.finfo(np.float32).max
    columns = {'obs': np.full((3, 2), big, np.float32), 'next_obs': np.full((3, 2), big, np.float32),
               'action': np.zeros((3, 1), np.float32), 'reward': np.ones(3, np.float32), 'done': np.zeros(3, bool)}
    with np.errstate(over='ignore'):
        assert nonfinite_rows(columns) is None
        columns['next_obs'][1, 0], columns['reward'][2] = np.nan, -np.inf
        assert nonfinite_rows(columns).tolist() == [False, True, True]
