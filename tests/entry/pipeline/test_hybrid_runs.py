"""Hybrid actions end to end: an env of a Discrete and a Box trains from plain SAC's config (run as hybrid SAC), acts
in its own space through ``load_policy``, and refuses the policies and features that cannot act in it."""
from __future__ import annotations

import csv
import pprint
import subprocess

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.config import ConfigError
from entry import load_policy, serial_pipeline


def _cfg(tmp_path, layout='tuple', **policy):
    main = dict(exp_name=str(tmp_path / 'run'),
                env=dict(env_id='PointModes-v0', env_kwargs=dict(layout=layout), collector_env_num=4,
                         evaluator_env_num=4, n_evaluator_episode=8, stop_value=0),
                policy=dict(random_collect_size=1000, model=dict(actor_head_hidden_size=64, critic_head_hidden_size=64),
                            learn=dict(batch_size=128, learning_rate_q=1e-3, learning_rate_policy=1e-3),
                            collect=dict(n_sample=4), eval=dict(evaluator=dict(eval_freq=250)), **policy))
    return main, dict(env=dict(type='gymnasium'), env_manager=dict(type='base'), policy=dict(type='sac'))


@pytest.mark.parametrize('layout', ['dict', 'box_first'])
def test_plain_sacs_config_learns_a_hybrid_env_and_predicts_in_its_own_space(tmp_path, layout):
    main, create = _cfg(tmp_path, layout)
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(create)}\n")
    ran = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '-s', '0', '--max-env-step', '3000'],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    saved = (tmp_path / 'run' / 'total_config.py').read_text()
    assert "'type': 'hybrid_sac'" in saved and "'choices': 2" in saved
    returns = [float(row['return_mean']) for row in csv.DictReader(open(tmp_path / 'run' / 'log' / 'evaluator.csv'))]
    assert returns[0] < -40 and max(returns) > -15  # random pushes end far off; the goal reached within 3000 steps
    agent = load_policy(str(tmp_path / 'run'))
    space = gym.make('PointModes-v0', layout=layout).action_space
    action = agent.predict(np.array([0.0, 0.0, 1.0, 1.0], np.float32))
    assert space.contains(action)
    assert all(space.contains(a) for a in agent.predict(np.zeros((3, 4), np.float32)))


@pytest.mark.parametrize('policy, create_policy, message', [
    ({}, 'discrete_sac', "cannot act in the hybrid actions"),
    ({}, 'tqc', "'tqc' cannot act in the hybrid actions"),
    ({'model': dict(rnn=dict(type='lstm', hidden_size=8)), 'collect': dict(unroll_len=4)}, 'sac',
     "policy.model.rnn .* with policy 'hybrid_sac'"),
])
def test_what_cannot_act_in_hybrid_actions_is_refused_before_anything_is_collected(tmp_path, policy, create_policy,
                                                                                     message):
    main, create = _cfg(tmp_path)
    main['policy'] = {**main['policy'], **policy, 'model': {**main['policy']['model'], **policy.get('model', {})},
                      'collect': {**main['policy']['collect'], **policy.get('collect', {})}}
    create['policy']['type'] = create_policy
    with pytest.raises(ConfigError, match=message):
        serial_pipeline((main, create), seed=0, max_env_step=100)
    assert not (tmp_path / 'run' / 'ckpt').exists()


@pytest.mark.parametrize('route', ['hybrid_sac', 'sac'])
def test_hybrid_actions_of_three_choices_train_by_either_route(tmp_path, route):
    """``create.policy.type='hybrid_sac'``, or ``'sac'`` with hybrid SAC's own keys, on an env whose Discrete part
    has 3 choices: both train (``choices`` read from the env, none set), and the second says it runs as hybrid SAC."""
    import os
    from tests.conftest import ROOT
    main = dict(exp_name=str(tmp_path / 'run'),
                env=dict(env_id='tests.envs.three_modes:ThreeModes-v0', collector_env_num=2, evaluator_env_num=2,
                         n_evaluator_episode=2, stop_value=0),
                policy=dict(random_collect_size=40,
                            model=dict(actor_head_hidden_size=16, critic_head_hidden_size=16, box_per_choice=True),
                            learn=dict(batch_size=16, choice_entropy_ratio=0.5), collect=dict(n_sample=4),
                            eval=dict(evaluator=dict(eval_freq=25))))
    create = dict(env=dict(type='gymnasium'), env_manager=dict(type='base'), policy=dict(type=route))
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(create)}\n")
    ran = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '-s', '0', '--max-env-step', '120'],
                         capture_output=True, text=True, timeout=300, env={**os.environ, 'PYTHONPATH': ROOT})
    assert ran.returncode == 0, ran.stderr[-2000:]
    saved = (tmp_path / 'run' / 'total_config.py').read_text()
    assert "'type': 'hybrid_sac'" in saved and "'choices': 3" in saved and "'choice_entropy_ratio': 0.5" in saved
    assert ("policy 'sac' runs as 'hybrid_sac'" in ran.stdout) == (route == 'sac')
