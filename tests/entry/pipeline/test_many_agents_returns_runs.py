"""Many agents' run-level rows through ``entry``: image observations through ``env.wrappers``, a competitive env's
per-agent and per-team returns and ``evaluator.stop_on``."""
from __future__ import annotations

import re

import pytest

from ding_lite.utils.default_config import ConfigError
from ding_lite.worker import InteractionSerialEvaluator
from envs import PettingZooEnv


def test_image_observations_are_refused_with_the_fix_and_train_through_wrappers(tmp_path):
    """pistonball's kind of env: images are refused naming env.wrappers (SuperSuit's), and a wrapper of the user's
    own (a function of the parallel env, by import path, with its keywords) shrinks them into vectors that train."""
    from entry import serial_pipeline
    from tests.conftest import TINY_PENDULUM
    with pytest.raises(ConfigError, match=r"observations are images \({'left': \(3, 12, 12\).*env.wrappers.*"
                                          r"supersuit.*resize_v1"):
        PettingZooEnv({'env_id': 'tests.envs.image_agents'})
    if not _has('supersuit'):  # a short name is SuperSuit's
        with pytest.raises(ConfigError, match=r"cannot import wrapper 'resize_v1'.*pip install supersuit"):
            PettingZooEnv({'env_id': 'tests.envs.image_agents', 'wrappers': ['resize_v1']})
    env = PettingZooEnv({'env_id': 'tests.envs.image_agents',
                         'wrappers': [dict(type='tests.envs.image_agents.shrink', pool=3)]})
    env.seed(0)
    assert env.observation_space.shape == (16,) and env.reset()['obs'].shape == (2, 16)
    main = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'images'))
    main['env'] = dict(collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=1, stop_value=1e9,
                       env_id='tests.envs.image_agents', wrappers=[dict(type='tests.envs.image_agents.shrink')])
    main['policy'] = {**main['policy'], 'model': dict(actor_head_hidden_size=16, critic_head_hidden_size=16)}
    create = dict(env=dict(type='pettingzoo_agents'), env_manager=dict(type='base'), policy=dict(type='sac'))
    policy = serial_pipeline((main, create), seed=0, max_train_iter=20)
    assert policy._cfg.model.obs_shape == 16 and (tmp_path / 'images' / 'log' / 'evaluator.csv').is_file()


def _has(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


def _adversary_config(tmp_path, **evaluator):
    import pprint
    from tests.conftest import TINY_PENDULUM
    main = dict(TINY_PENDULUM, exp_name='adversary')
    main['env'] = dict(collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=1, stop_value=1e9,
                       env_id='mpe2.simple_adversary_v3', env_kwargs=dict(max_cycles=5, continuous_actions=True))
    main['policy'] = {**main['policy'], 'model': dict(actor_head_hidden_size=16, critic_head_hidden_size=16),
                      'eval': dict(evaluator=dict(eval_freq=10, **evaluator))}
    create = dict(env=dict(type='pettingzoo_agents'), env_manager=dict(type='base'), policy=dict(type='sac'))
    path = tmp_path / 'adversary_config.py'
    path.write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(create)}\n")
    return str(path)


def test_eval_of_a_competitive_env_gives_each_agents_and_teams_return_and_stop_on_names_one(tmp_path):
    """simple_adversary through the CLI: ``-m eval`` prints each agent's return and each team's (adversary against
    the good agents), not only their sum; ``evaluator.stop_on`` with a typo is refused before anything runs."""
    import csv
    import subprocess
    pytest.importorskip('mpe2')
    config = _adversary_config(tmp_path)
    ran = subprocess.run(['ding_lite', '-m', 'serial', '-c', config, '-s', '0', '--max-train-iter', '10'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    row = list(csv.DictReader(open(tmp_path / 'adversary' / 'log' / 'evaluator.csv')))[-1]
    teams = float(row['return_team_adversary']) + float(row['return_team_agent'])
    assert teams == pytest.approx(float(row['return_mean']), abs=1e-3)
    assert float(row['return_team_agent']) == pytest.approx(float(row['return_agent_0']) + float(row['return_agent_1']),
                                                            abs=1e-3)
    run = tmp_path / 'adversary'
    ran = subprocess.run(['ding_lite', '-m', 'eval', '-c', str(run / 'total_config.py'), '--load-path',
                          str(run / 'ckpt' / 'ckpt_best.pth.tar'), '--episodes', '2'], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert re.search(r"per agent: adversary_0 -?[\d.]+, agent_0 -?[\d.]+, agent_1 -?[\d.]+", ran.stdout), ran.stdout
    assert re.search(r"per team: adversary -?[\d.]+, agent -?[\d.]+", ran.stdout), ran.stdout
    ran = subprocess.run(['ding_lite', '-m', 'serial', '-c', config, '-s', '0', '--max-train-iter', '10', '--set',
                          "policy.eval.evaluator.stop_on='adversry'", '--set', 'exp_name=typo'], capture_output=True,
                         text=True, cwd=tmp_path, timeout=300)
    assert ran.returncode != 0 and "stop_on='adversry' names no agent or team" in ran.stderr
    assert "['adversary_0', 'agent_0', 'agent_1']" in ran.stderr and not (tmp_path / 'typo').exists()


def test_stop_on_a_team_reads_that_teams_return_for_the_stop_value_and_the_best_checkpoint(tmp_path):
    episodes = [{'return_adversary_0': 5.0, 'return_agent_0': -20.0, 'return_team_adversary': 5.0,
                 'return_team_agent': -20.0, 'length_adversary_0': 5, 'length_agent_0': 5}]
    saved = []
    evaluator = InteractionSerialEvaluator(dict(stop_value=4.0, stop_on='adversary'), None, None,
                                           exp_name=str(tmp_path))
    stop, info = evaluator.record([-15.0], saved.append, 0, 0, episodes)
    assert stop and evaluator.best_return == 5.0 and saved == ['ckpt_best.pth.tar']  # the sum -15 would not stop
    plain = InteractionSerialEvaluator(dict(stop_value=4.0), None, None, exp_name=str(tmp_path / 'plain'))
    assert not plain.record([-15.0], None, 0, 0, episodes)[0]
