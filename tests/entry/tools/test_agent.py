"""Load and act: ``load_policy(run).predict(obs)`` in the env's own units replays the run's evaluation in a plain
gymnasium loop, and ``ding_lite export`` writes a TorchScript actor that runs without ding_lite."""
from __future__ import annotations

import copy
import csv
import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_lite import load_policy
from entry import serial_pipeline
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _train(tmp_path, name: str, norm: bool = False, discrete: bool = False) -> tuple[str, EasyDict]:
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / name)
    del main.policy.model['obs_shape'], main.policy.model['action_shape']  # read from the env
    main.env.norm_obs = dict(use_norm=norm)
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    if discrete:
        create.env.type, create.policy.type = 'cartpole', 'discrete_sac'
    serial_pipeline((main, create), seed=0, max_train_iter=40)
    return main.exp_name, main


def _best_return(run: str) -> float:
    return max(float(row['return_mean']) for row in csv.DictReader(open(os.path.join(run, 'log', 'evaluator.csv'))))


@pytest.mark.parametrize('norm, discrete', [(False, False), (True, False), (False, True)])
def test_predict_in_a_plain_gymnasium_loop_replays_the_best_evaluation(tmp_path, norm, discrete):
    run, main = _train(tmp_path, 'run', norm, discrete)
    agent = load_policy(run)  # ckpt_best: the weights of the best evaluation
    returns = []
    for i in range(main.env.evaluator_env_num):  # the evaluator's episodes: env i starts from seed + i
        env = gym.make('CartPole-v1' if discrete else 'Pendulum-v1', max_episode_steps=20)
        obs, _ = env.reset(seed=i)
        total, done = 0.0, False
        while not done:
            action = agent.predict(obs)
            assert isinstance(action, int) if discrete else (action.shape == (1,) and abs(action[0]) <= 2.0)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    assert np.mean(returns) == pytest.approx(_best_return(run), rel=1e-5)
    batch = np.stack([env.observation_space.sample() for _ in range(3)])
    expected = [agent.predict(row) for row in batch]
    np.testing.assert_allclose(agent.predict(batch), np.array(expected), rtol=1e-5, atol=1e-6)  # a batch, by rows
    assert np.array_equal(agent.predict(torch.as_tensor(batch)), agent.predict(batch))  # tensors too
    if not discrete:
        sampled = agent.predict(np.repeat(batch[:1], 64, 0), deterministic=False)
        assert sampled.std() > 0 and np.abs(sampled).max() <= 2.0  # drawn from the policy, in the bounds


def test_export_runs_with_torch_alone_and_acts_as_predict(tmp_path):
    run, _ = _train(tmp_path, 'run', norm=True)
    actor = tmp_path / 'actor.pt'
    result = subprocess.run(['ding_lite', 'export', run, '-o', str(actor)], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 0 and f"wrote {actor}" in result.stdout, result.stderr[-2000:]
    obs = np.random.default_rng(0).uniform(-1, 1, (5, 3)).astype(np.float32)
    script = ("import json, sys, torch\n"
              "for name in ('ding_lite', 'policy_zoo', 'envs', 'entry'):\n"
              "    sys.modules[name] = None  # importing any of them now fails\n"
              f"actions = torch.jit.load({str(actor)!r})(torch.tensor({obs.tolist()!r}))\n"
              "print(json.dumps(actions.tolist()))\n")
    out = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    np.testing.assert_allclose(np.array(json.loads(out.stdout)), load_policy(run).predict(obs), rtol=1e-5, atol=1e-6)
    blocked = subprocess.run([sys.executable, '-c', script.split('actions')[0] + 'import ding_lite\n'],
                             capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert blocked.returncode != 0  # the check above really ran without ding_lite


class Float64Obs(gym.ObservationWrapper):
    """Pendulum with a float64 Box observation, as many custom envs declare theirs."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = gym.spaces.Box(env.observation_space.low.astype(np.float64),
                                                env.observation_space.high.astype(np.float64), dtype=np.float64)

    def observation(self, obs):
        return obs.astype(np.float64)


def test_an_exported_actor_takes_the_envs_float64_observations(tmp_path):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name, main.env.wrappers = str(tmp_path / 'run'), [f'{__name__}.Float64Obs']
    serial_pipeline((main, EasyDict(copy.deepcopy(TINY_CREATE))), seed=0, max_train_iter=4)
    run = main.exp_name  # no normaliser: nothing else casts them
    actor = torch.jit.load(load_policy(run).export(str(tmp_path / 'actor.pt')))
    obs = np.random.default_rng(0).uniform(-1, 1, (4, 3))                  # float64, as gymnasium's Box(float64) gives
    np.testing.assert_allclose(actor(torch.as_tensor(obs)).numpy(), load_policy(run).predict(obs), rtol=1e-5,
                               atol=1e-6)


def test_load_policy_errors_name_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no checkpoint .*ckpt_best.pth.tar: give a run folder"):
        load_policy(str(tmp_path))
    (tmp_path / 'ckpt').mkdir()
    (tmp_path / 'ckpt' / 'ckpt_best.pth.tar').write_bytes(b'')
    with pytest.raises(FileNotFoundError, match='has no total_config.py'):
        load_policy(str(tmp_path))


@pytest.mark.parametrize('prev_reward', [False, True])
def test_a_recurrent_run_predicts_with_its_state_and_exports_an_actor_that_carries_it(tmp_path, prev_reward):
    """SB3-contrib's ``predict(obs, state, episode_start) -> (action, state)`` replays the best evaluation of a
    recurrent run on position-only Pendulum; the exported actor maps ``(obs, state)`` as predict does."""
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / 'rnn')
    main.policy.model.update(obs_shape=2, rnn=dict(type='lstm', hidden_size=8, prev_action=True,
                                                   prev_reward=prev_reward))
    main.policy.collect.unroll_len = 3
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.env.type = 'pendulum_position'
    serial_pipeline((main, create), seed=0, max_train_iter=20)
    agent = load_policy(main.exp_name)
    returns = []
    for i in range(main.env.evaluator_env_num):
        env = gym.make('PendulumPosition-v1', max_episode_steps=20)
        obs, _ = env.reset(seed=i)
        total, done, state, reward, start = 0.0, False, None, None, True
        while not done:
            action, state = agent.predict(obs, state, episode_start=start, reward=reward)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, done, start = total + float(reward), terminated or truncated, False
        returns.append(total)
    assert np.mean(returns) == pytest.approx(_best_return(main.exp_name), rel=1e-5)
    batch = np.stack([env.observation_space.sample() for _ in range(4)])
    actions, states = agent.predict(batch, reward=np.zeros(4) if prev_reward else None)
    again, _ = agent.predict(batch, states, episode_start=[True, False, True, False],
                             reward=np.ones(4) if prev_reward else None)
    first, _ = agent.predict(batch[:1])
    assert np.allclose(again[0], first) and np.allclose(again[2], agent.predict(batch[2])[0])
    assert not np.allclose(again[1], actions[1])  # the state carried a memory of the last step
    if prev_reward:
        with pytest.raises(ValueError, match='reads the previous reward'):
            agent.export(str(tmp_path / 'actor.pt'))
        return
    actor = torch.jit.load(agent.export(str(tmp_path / 'actor.pt')))
    exported, exported_state = actor(torch.as_tensor(batch), torch.as_tensor(states))
    expected, expected_state = agent.predict(batch, states)
    np.testing.assert_allclose(exported.numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exported_state.numpy(), expected_state, rtol=1e-5, atol=1e-6)
