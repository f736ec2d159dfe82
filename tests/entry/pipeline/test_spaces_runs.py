"""Spaces as a user runs it: the tests of ``tests.envs.test_spaces`` that train or load through ``entry`` (the core
tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import os
import subprocess
import sys

from easydict import EasyDict
import numpy as np
import pytest
import torch

from ding_lite.config import ConfigError
from ding_lite.utils import load_file
from entry import eval as evaluate
from entry import serial_pipeline
from tests.envs.test_spaces import IMAGE, ROOT, SpacesEnv, _cfg


@pytest.mark.parametrize('manager', ['base', 'subprocess'])
@pytest.mark.parametrize('obs, action, stored', [
    ('dict', 'box', (4,)),            # Dict(Box(1), Discrete(3)) flattened: 1 + one-hot 3
    ('box2d', 'box', (25,)),          # a (5, 5) Box flattened
    ('hwc', 'box', (3,) + IMAGE),     # HWC uint8 transposed to CHW
    ('chw', 'box', (3,) + IMAGE),     # CHW as it is
    ('discrete', 'box', (5,)),        # Discrete(5) one-hot
    ('box', 'asym', (1,)),            # actions scaled into [2, 5]
])
def test_spaces_are_adapted_and_shapes_read_from_the_env(tmp_path, manager, obs, action, stored):
    main, create = _cfg(tmp_path, obs, action, manager)
    SpacesEnv.ACTIONS.clear()
    serial_pipeline((main, create), seed=0, max_env_step=160)
    saved = open(os.path.join(main.exp_name, 'total_config.py')).read()
    obs_shape = list(stored) if len(stored) == 3 else stored[0]
    assert f"'obs_shape': {obs_shape!r}" in saved and "'action_shape': 1," in saved  # read from the env, recorded
    state = load_file(os.path.join(main.exp_name, 'ckpt', 'ckpt_last.pth.tar'))
    data = load_file(os.path.join(main.exp_name, 'ckpt', state['buffer_file']))['replay_buffer']['data']
    assert data[('obs',)].shape[1:] == stored and data[('next_obs',)].shape[1:] == stored
    assert data[('obs',)].dtype == (torch.uint8 if len(stored) == 3 else torch.float32)
    assert state['last_iter'] > 0 and np.isfinite(evaluate((main, create), seed=0, state_dict=state))
    if manager == 'base':  # the env, in this process, saw only actions inside its own bounds
        actions = np.array(SpacesEnv.ACTIONS)
        low, high = (2.0, 5.0) if action == 'asym' else (-1.0, 1.0)
        assert len(actions) >= 160 and actions.min() >= low and actions.max() <= high
        if action == 'asym':
            assert actions.max() - actions.min() > 1.5  # spread over the range, not clipped to one end


@pytest.mark.parametrize('action, model, message', [
    ('multidiscrete', {}, r"policy 'sac' needs continuous \(Box\) actions, but env 'SpacesTest-v0' has "
                          r"MultiDiscrete.*a 1-D Box \('sac'\), a Discrete space \('discrete_sac'\) or a Tuple or "
                          r"Dict of one Discrete and one 1-D Box \('hybrid_sac'"),
    ('box', dict(obs_shape=[36, 36, 3]), r"policy.model.obs_shape=\[36, 36, 3\] does not match env 'SpacesTest-v0', "
                                         r"whose observations are \[3, 36, 36\]"),
    ('box', dict(action_shape=2), r"policy.model.action_shape=2 does not match env 'SpacesTest-v0', whose action "
                                  r"size is 1"),
])
def test_unusable_spaces_and_wrong_shapes_fail_before_any_env_step(tmp_path, action, model, message):
    main, create = _cfg(tmp_path, 'hwc', action, **model)
    SpacesEnv.STEPS[0] = 0
    with pytest.raises(ConfigError, match=message):
        serial_pipeline((main, create), seed=0, max_env_step=96)
    assert SpacesEnv.STEPS[0] == 0 and not os.path.exists(main.exp_name)  # nothing stepped, nothing left behind


@pytest.mark.parametrize('obs, message', [
    ('text', r"env 'SpacesTest-v0': the env's observation space is a Text: text, which would be trained on as "
             r"character codes; map it to a Box"),
    ('graph', r"the env's observation space is a Graph: a graph of varying size, which needs a graph network"),
    ('mission', r"observation\['mission'\] is a Text: text, .*; drop it with a wrapper in env.wrappers: "
                r"dict\(type='FilterObservation', filter_keys=\['image', 'pos'\]\), or for MiniGrid "
                r"'minigrid.wrappers.ImgObsWrapper'"),
])
def test_text_and_graph_observations_are_refused_by_name(tmp_path, obs, message):
    main, create = _cfg(tmp_path, obs)
    SpacesEnv.STEPS[0] = 0
    with pytest.raises(ConfigError, match=message):
        serial_pipeline((main, create), seed=0, max_env_step=96)
    assert SpacesEnv.STEPS[0] == 0 and not os.path.exists(main.exp_name)


def test_the_advised_wrapper_trains_a_small_image_beside_a_vector(tmp_path):
    """A Dict of a 16x16 image (too small for DI-engine's kernels: fitted) and a vector, its text key dropped as the
    refusal advises."""
    main, create = _cfg(tmp_path, 'mission')
    main.env.wrappers = [dict(type='FilterObservation', filter_keys=['image', 'pos'])]
    main.policy.model.encoder_hidden_size_list = [8, 8, 8, 16]
    serial_pipeline((main, create), seed=0, max_env_step=96)
    saved = open(os.path.join(main.exp_name, 'total_config.py')).read()
    assert "'obs_shape': {'image': [3, 16, 16], 'pos': 1}" in saved


def test_a_users_base_env_with_a_dict_observation_is_flattened_too(tmp_path):
    main, create = _cfg(tmp_path, 'dict')
    main.env = EasyDict(collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1)
    create.env.type = 'dict_obs_test'
    policy = serial_pipeline((main, create), seed=0, max_env_step=64)
    assert policy._cfg.model.obs_shape == 4


def test_env_key_typos_are_one_error_line_at_the_command_line(tmp_path):
    config = tmp_path / 'bad_env_config.py'
    config.write_text(
        "main_config = dict(exp_name='bad_seed0', env=dict(env_id='Pendulum-v1', colector_env_num=2),\n"
        "                   policy=dict(model=dict(), learn=dict(batch_size=16)))\n"
        "create_config = dict(env=dict(type='gymnasium'), policy=dict(type='sac'))\n")
    result = subprocess.run([sys.executable, '-m', 'entry.cli', '-m', 'serial', '-c', str(config)], cwd=tmp_path,
                            capture_output=True, text=True, env={**os.environ, 'PYTHONPATH': ROOT}, timeout=120)
    assert result.returncode != 0 and not (tmp_path / 'bad_seed0').exists()
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("ding_lite: error: ConfigError: unknown config key 'env.colector_env_num'; did you mean "
                           "'env.collector_env_num'? (envs each collector steps) declared here: act_scale, ")
    assert 'norm_obs, norm_reward, reward_clip, stop_value, wrappers' in line and 'Traceback' not in result.stderr


def test_norm_obs_on_images_is_refused_before_any_env_step(tmp_path):
    main, create = _cfg(tmp_path, 'hwc')
    main.env.norm_obs = dict(use_norm=True)
    SpacesEnv.STEPS[0] = 0
    with pytest.raises(ConfigError, match=r"env.norm_obs.use_norm=True normalises vector observations, but the "
                                          r"model's obs_shape is \[3, 36, 36\]"):
        serial_pipeline((main, create), seed=0, max_env_step=96)
    assert SpacesEnv.STEPS[0] == 0 and not os.path.exists(main.exp_name)
