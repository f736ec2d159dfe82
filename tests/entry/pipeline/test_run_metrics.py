"""What a run logs beyond the learner: env info metrics (is_success as success_rate) per collector and evaluator,
evaluator.csv's extra columns and ``ding_lite plot --y``, the collecting policy's entropy, histograms, and
env.reward_clip."""
from __future__ import annotations

import csv
import math
import subprocess

import gymnasium as gym
import pytest
import torch

from ding_lite.config import ConfigError, compile_config
from ding_lite.data import ReplayBuffer
from ding_lite.worker import InteractionSerialEvaluator
from entry import serial_pipeline
from policy_zoo import DiscreteSACPolicy, SACPolicy
from tests.conftest import TINY_CREATE, TINY_PENDULUM
from tests.tb_events import read_histogram_tags, read_scalars


class AlternatingSuccess(gym.Wrapper):
    """Ends even episodes (0, 2, ...) with info['is_success'] = True, odd ones False, and reports 3 coins."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.episodes = 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info = dict(info, is_success=self.episodes % 2 == 0, coins=3, note='not a number')
            self.episodes += 1
        return obs, reward, terminated, truncated, info


def _cfg(tmp_path, **env):
    main = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'run'))
    main['env'] = dict(main['env'], collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=2,
                       wrappers=[f'{__name__}.AlternatingSuccess'], **env)
    main['policy'] = dict(main['policy'], collect=dict(n_sample=4, collector=dict(collect_print_freq=5)))
    return main, dict(TINY_CREATE)


def test_success_rate_and_info_metrics_reach_the_logs_and_evaluator_csv(tmp_path):
    main, create = _cfg(tmp_path, info_metrics=['coins'])
    serial_pipeline((main, create), seed=0, max_train_iter=30)  # 20-step episodes, 4 env steps per iteration
    scalars = read_scalars(f'{main["exp_name"]}/log/serial')
    counts = [c for _, c in scalars['collector/episode_count']]
    rates = [r for _, r in scalars['collector/success_rate']]
    assert len(rates) == len(counts) >= 2
    episodes = sum(counts)  # episodes 0, 2, 4, ... succeeded: over every logged window together, ceil(n / 2)
    assert sum(r * c for r, c in zip(rates, counts)) == pytest.approx(math.ceil(episodes / 2))
    assert all(v == 3.0 for _, v in scalars['collector/coins'])
    assert 'collector/note' not in scalars and 'collector/is_success' not in scalars
    assert [v for _, v in scalars['evaluator/success_rate']] == [0.5] * len(scalars['evaluator/return_mean'])
    assert 'collector/entropy' in scalars
    rows = list(csv.DictReader(open(f'{main["exp_name"]}/log/evaluator.csv')))
    assert list(rows[0])[:7] == ['train_iter', 'envstep', 'wall_time', 'return_mean', 'return_std', 'return_min',
                                 'return_max']
    assert len(rows) >= 3 and all(float(r['success_rate']) == 0.5 and float(r['coins']) == 3 for r in rows)
    plotted = subprocess.run(['ding_lite', 'plot', main['exp_name'], '--y', 'success_rate', '-o',
                              str(tmp_path / 'success.png')], capture_output=True, text=True, timeout=120)
    assert plotted.returncode == 0 and (tmp_path / 'success.png').stat().st_size > 0, plotted.stderr
    missing = subprocess.run(['ding_lite', 'plot', main['exp_name'], '--y', 'succes_rate'], capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode != 0 and "has no column 'succes_rate'" in missing.stderr


class MazeSuccess(gym.Wrapper):
    """Reports success as gymnasium-robotics' PointMaze does: info['success'], every step."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, dict(info, success=True)


def test_info_success_is_logged_as_the_success_rate_too(tmp_path):
    main, create = _cfg(tmp_path)
    main['env']['wrappers'] = [f'{__name__}.MazeSuccess']
    serial_pipeline((main, create), seed=0, max_train_iter=2)
    rows = list(csv.DictReader(open(f'{main["exp_name"]}/log/evaluator.csv')))
    assert rows and all(float(r['success_rate']) == 1.0 for r in rows) and 'success' not in rows[0]


def test_a_metric_that_appears_later_widens_evaluator_csv(tmp_path):
    evaluator = InteractionSerialEvaluator(None, None, None, exp_name=str(tmp_path))
    evaluator.record([1.0, 3.0], train_iter=0, envstep=0)
    evaluator.record([2.0], train_iter=10, envstep=50, metrics=[{'is_success': 1.0}, {'is_success': 0.0}, {}])
    rows = list(csv.DictReader(open(evaluator.csv_path)))
    assert [r['return_mean'] for r in rows] == ['2', '2'] and [r['success_rate'] for r in rows] == ['', '0.5']
    assert evaluator.last_info['success_rate'] == 0.5


def test_histograms_of_actions_and_rewards_when_asked(tiny_pendulum):
    main, create = tiny_pendulum
    main.policy.learn.learner.log_histograms = True
    serial_pipeline((main, create), seed=0, max_train_iter=10)
    assert read_histogram_tags(f'{main.exp_name}/log/serial') == {'collector/action', 'collector/reward'}


def test_sac_collect_entropy_is_the_tanh_gaussians():
    policy = SACPolicy.__new__(SACPolicy)
    mu, sigma = torch.zeros(4096, 2), torch.full((4096, 2), 0.01)  # tanh ~ linear: the Gaussian's own entropy
    entropy = policy._collect_entropy({'logit': torch.stack([mu, sigma], 1)}, {})
    assert entropy.mean().item() == pytest.approx(2 * (math.log(0.01) + 0.5 * math.log(2 * math.pi * math.e)),
                                                  abs=0.06)  # 4 std of the estimate
    state = torch.get_rng_state()
    policy._collect_entropy({'logit': torch.stack([mu, sigma], 1)}, {})
    assert torch.equal(state, torch.get_rng_state())  # the run's random stream is untouched


def test_discrete_collect_entropy_includes_eps_exploration_and_the_mask():
    policy = DiscreteSACPolicy.__new__(DiscreteSACPolicy)
    logit = torch.tensor([[100.0, 0.0, 0.0, 0.0]])
    p = torch.tensor([0.625, 0.125, 0.125, 0.125])
    assert policy._collect_entropy({'logit': logit}, {'eps': 0.5}).item() == pytest.approx(-(p * p.log()).sum())
    masked = {'logit': torch.zeros(1, 4), 'action_mask': torch.tensor([[1, 1, 0, 0]])}
    assert policy._collect_entropy(masked, {'eps': 0.3}).item() == pytest.approx(math.log(2))


def test_the_logged_entropy_of_many_forwards_is_one_computation_over_those_called_alike(monkeypatch):
    """The collector's entropy log: forwards called with the same keywords are joined into one computation (a
    kernel launch per forward on a GPU otherwise); its mean is every row's, as forward by forward; a change of
    keywords (eps moved) starts another computation."""
    from ding_lite.rl_utils.entropy_log import CollectEntropyLog
    policy = DiscreteSACPolicy.__new__(DiscreteSACPolicy)
    torch.manual_seed(0)
    outputs = [({'logit': torch.randn(3, 4), 'action_mask': torch.ones(3, 4)}, {'eps': 0.1}) for _ in range(5)]
    outputs += [({'logit': torch.randn(2, 4), 'action_mask': torch.ones(2, 4)}, {'eps': 0.2}) for _ in range(3)]
    expected = torch.cat([policy._collect_entropy(o, k) for o, k in outputs]).mean().item()
    calls = []
    original = DiscreteSACPolicy._collect_entropy
    monkeypatch.setattr(DiscreteSACPolicy, '_collect_entropy', lambda self, o, k: calls.append(
        (o['logit'].shape[0], k['eps'])) or original(self, o, k))
    policy._entropy_log = CollectEntropyLog()
    policy._entropy_log.recent.extend(outputs)
    assert policy._pop_collect_entropy() == pytest.approx(expected, rel=1e-6)
    assert calls == [(15, 0.1), (6, 0.2)]


def test_reward_clip_clips_what_is_stored_not_the_returns(tiny_pendulum, monkeypatch):
    main, create = tiny_pendulum
    main.env.reward_clip = [-1.0, 0.5]
    stored = []
    push = ReplayBuffer.push
    monkeypatch.setattr(ReplayBuffer, 'push', lambda self, data, *a: stored.append(data['reward']) or
                        push(self, data, *a))
    serial_pipeline((main, create), seed=0, max_train_iter=5)
    rewards = torch.cat([torch.as_tensor(r) for r in stored])
    assert rewards.min() == -1.0 and rewards.max() <= 0.5 and (rewards > -1.0).any()
    rows = list(csv.DictReader(open(f'{main.exp_name}/log/evaluator.csv')))
    assert float(rows[0]['return_mean']) < -20  # 20 Pendulum steps in the env's own units: far below 20 * -1
    for bad in (0, -1, [1, 1], 'x', True):
        main.env.reward_clip = bad
        with pytest.raises(ConfigError, match='env.reward_clip must be None, a number c > 0'):
            compile_config(main, create_cfg=create, save_cfg=False)


class StepStats(gym.Wrapper):
    """Reports ML-Agents-style env stats at every step: the step's index in its episode, a one and a constant."""

    def reset(self, **kwargs):
        self.t = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.t += 1
        return obs, reward, terminated, truncated, dict(info, t=self.t, one=1, speed=2.5)


def test_info_stats_aggregate_every_step_per_log_as_ml_agents_does(tmp_path):
    main, create = _cfg(tmp_path, info_stats={'t': 'MOST_RECENT', 'one': 'sum', 'speed': 'average'})
    main['env']['wrappers'] = [f'{__name__}.StepStats']
    serial_pipeline((main, create), seed=0, max_train_iter=30)
    scalars = read_scalars(f'{main["exp_name"]}/log/serial')
    recent = scalars['collector/t']
    assert len(recent) >= 2 and all(v == (step - 1) % 20 + 1 for step, v in recent)  # the last step's value
    sums = scalars['collector/one']
    assert all(v == step - before for (before, _), (step, v) in zip(sums, sums[1:]))  # every step since the last log
    assert {v for _, v in scalars['collector/speed']} == {2.5}
    rows = list(csv.DictReader(open(f'{main["exp_name"]}/log/evaluator.csv')))
    assert rows and all(float(r['t']) == 20 and float(r['one']) == 40 for r in rows)  # 2 episodes of 20 steps


@pytest.mark.parametrize('spec', [{'t': 'median'}, ['t']])
def test_info_stats_with_an_unknown_aggregation_is_refused_at_compile_time(tmp_path, spec):
    main, create = _cfg(tmp_path, info_stats=spec)
    with pytest.raises(ConfigError, match="env.info_stats"):
        compile_config(main, create, save_cfg=False)


def test_the_learner_logs_di_engines_names_beside_its_own(tmp_path):
    main, create = _cfg(tmp_path)
    main['policy'] = dict(main['policy'], learn=dict(main['policy']['learn'], learning_rate_q=2e-3,
                                                     learning_rate_policy=5e-4))
    serial_pipeline((main, create), seed=0, max_train_iter=10)
    scalars = {key: dict(values) for key, values in read_scalars(f'{main["exp_name"]}/log/serial').items()}
    steps = scalars['learner/critic_loss'].keys()
    assert steps and all(scalars['learner/cur_lr_q'][i] == pytest.approx(2e-3) and
                         scalars['learner/cur_lr_p'][i] == pytest.approx(5e-4) for i in steps)
    for i in steps:  # DI-engine's total: both critics' losses (this critic_loss), the actor's and alpha's
        losses = [scalars[f'learner/{k}'][i] for k in ('critic_loss', 'policy_loss', 'alpha_loss')]
        assert scalars['learner/total_loss'][i] == pytest.approx(sum(losses), rel=1e-5)
        assert 0 < scalars['learner/twin_critic_loss'][i] < scalars['learner/critic_loss'][i]
    log = open(f'{main["exp_name"]}/log/learner.txt').read()
    assert all(f'{name}:' in log for name in ('twin_critic_loss', 'cur_lr_q', 'cur_lr_p', 'total_loss', 'td_error',
                                               'target_q_value', 'alpha_loss', 'entropy'))


def test_report_collected_logs_each_episodes_value_estimate_and_signal_return(tmp_path):
    main, create = _cfg(tmp_path)
    main['policy'] = dict(main['policy'], reward_signals=dict(extrinsic=dict(), rnd=dict(encoding_size=8)),
                          collect=dict(main['policy']['collect'],
                                       collector=dict(collect_print_freq=5, report_collected=True)))
    policy = serial_pipeline((main, create), seed=0, max_train_iter=30)
    scalars = read_scalars(f'{main["exp_name"]}/log/serial')
    for key in ('collector/value_estimate', 'collector/rnd_return'):
        assert len(scalars[key]) >= 2 and all(math.isfinite(v) for _, v in scalars[key])
    assert all(v > 0 for _, v in scalars['collector/rnd_return'])  # RND's novelty: positive, summed over 20 steps
    columns = {'obs': torch.randn(5, 3).numpy(), 'action': (torch.rand(5, 1) * 2 - 1).numpy(),
               'next_obs': torch.randn(5, 3).numpy(), 'reward': torch.randn(5).numpy(),
               'done': torch.zeros(5, dtype=torch.bool).numpy()}
    reports = policy.score_transitions(columns)
    with torch.no_grad():  # the critics' min of the actions taken, their two heads (extrinsic, rnd) averaged
        q = policy._model.compute_critic({'obs': torch.as_tensor(columns['obs']),
                                          'action': torch.as_tensor(columns['action'])})['q_value']
    expected = q.mean(-1).min(0).values.numpy()
    assert reports['value_estimate'] == pytest.approx(expected, rel=1e-5) and reports['rnd'].shape == (5,)


def test_report_collected_on_dict_observations_is_refused_before_anything_is_collected(tmp_path):
    """Dict observations (an image beside a vector) are collected one transition at a time, which the critics do not
    score: refused by name through the CLI (it used to log nothing, with no word)."""
    from tests.entry.pipeline.test_multi_input import _write
    _write(tmp_path)
    ran = subprocess.run(['ding_lite', '-m', 'serial', '-c', 'cfg.py', '-s', '0', '--max-env-step', '100',
                          '--set', 'policy.collect.collector.report_collected=True'], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode != 0 and "report_collected=True" in ran.stderr and "observations are a Dict" in ran.stderr
    assert not list(tmp_path.glob('goal_seed0*/ckpt/*'))
