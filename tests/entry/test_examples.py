"""The "Your own env" examples of docs/plugins.md (``docs/examples/``) run from their config files alone, for a few
hundred env steps: a Dict observation flattened and normalised, and CarRacing's grey frames stacked for the conv
encoder."""
from __future__ import annotations

import os

import numpy as np
import pytest
from easydict import EasyDict

from ding_lite.config import read_config
from ding_lite.utils import load_file
from entry import load_policy, serial_pipeline
from tests.conftest import ROOT


@pytest.mark.parametrize('name, obs_shape', [('pendulum_dict_obs_sac_config', 4),
                                             ('carracing_sac_config', [4, 96, 96])])
def test_example_configs_train_a_few_hundred_steps(tmp_path, name, obs_shape):
    main, create = read_config(os.path.join(ROOT, 'docs', 'examples', f'{name}.py'))
    main.exp_name = str(tmp_path / name)
    main.env.update(collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1, stop_value=1e9,
                    env_kwargs=dict(max_episode_steps=50))  # short episodes, a small buffer: the plumbing, not skill
    main.policy.update(random_collect_size=100, learn=EasyDict(main.policy.learn, batch_size=16),
                       eval=dict(evaluator=dict(eval_freq=20)), other=dict(replay_buffer=dict(replay_buffer_size=500)))
    policy = serial_pipeline((main, create), seed=0, max_env_step=300)
    assert policy._cfg.model.obs_shape == obs_shape  # read from the env after wrappers, frame stacking, adaptation
    assert f"'obs_shape': {obs_shape!r}" in open(os.path.join(main.exp_name, 'total_config.py')).read()
    state = load_file(os.path.join(main.exp_name, 'ckpt', 'ckpt_last.pth.tar'))
    assert state['last_envstep'] >= 300 and state['last_iter'] > 0
    assert ('obs_norm.mean' in state['model']) == main.env.get('norm_obs', {}).get('use_norm', False)
    if name == 'pendulum_dict_obs_sac_config':  # a flattened Dict: predict takes one, a list, or a Dict of batches
        agent = load_policy(main.exp_name, 'ckpt_last.pth.tar')
        one = {'obs': np.array([1.0, 0.0, 0.0], np.float32), 'time': np.array([3])}
        rows = agent.predict([one, dict(one, time=np.array([9]))])
        assert rows.shape == (2, 1) and np.allclose(rows[0], agent.predict(one))
        np.testing.assert_allclose(agent.predict({'obs': np.stack([one['obs']] * 2), 'time': np.array([[3], [9]])}),
                                   rows)
