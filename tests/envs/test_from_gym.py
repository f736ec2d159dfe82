"""Envs as gymnasium users bring them (``env_setting``): a VectorEnv, a list of envs or factories, or DI-engine's
triple whose env_fn returns a gymnasium env."""
from __future__ import annotations

import copy

import gymnasium as gym
import pytest
from easydict import EasyDict

from ding_lite.config import ConfigError, compile_config
from ding_lite.utils import load_file
from entry import serial_pipeline
from envs.from_gym import vec_env_setting
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _cfg(tmp_path, name):
    main = copy.deepcopy(TINY_PENDULUM)
    main['exp_name'] = str(tmp_path / name)
    return main, copy.deepcopy(TINY_CREATE)


def _pendulum():
    return gym.make('Pendulum-v1', max_episode_steps=20)


@pytest.mark.parametrize('given', ['make_vec', 'factories', 'envs', 'di_engine'])
def test_a_run_takes_gymnasium_envs_as_their_users_bring_them(tmp_path, given):
    """Each form trains: the collector steps as many envs as were given (``env.collector_env_num`` follows), each
    a GymnasiumEnv around the user's env (actions scaled, seeded)."""
    setting = {'make_vec': lambda: gym.make_vec('Pendulum-v1', num_envs=3, vectorization_mode='sync',
                                                max_episode_steps=20),
               'factories': lambda: [_pendulum] * 3,
               'envs': lambda: [_pendulum() for _ in range(3)],
               'di_engine': lambda: (lambda cfg: _pendulum(), [{}] * 3, [{}] * 2)}[given]()
    serial_pipeline(_cfg(tmp_path, given), seed=0, env_setting=setting, max_train_iter=12)
    rows = (tmp_path / given / 'log' / 'evaluator.csv').read_text().splitlines()[1:]
    assert [row.split(',')[0] for row in rows] == ['0', '10', '12']  # eval_freq 10, and the last weights
    collector = load_file(str(tmp_path / given / 'ckpt' / 'ckpt_last.pth.tar'))['run']['collector']
    assert sorted(collector['return']) == [0, 1, 2] and len(set(collector['env']['seeds'])) == 3


def test_the_setting_follows_the_envs_given():
    env_cfg = EasyDict(collector_env_num=2, evaluator_env_num=2, act_scale=True, manager=EasyDict(type='base'))
    vec = gym.make_vec('Pendulum-v1', num_envs=4, vectorization_mode='async')
    env_fn, collector, evaluator = vec_env_setting(env_cfg, vec)
    assert len(collector) == 4 and env_cfg.collector_env_num == 4 and env_cfg.manager.type == 'subprocess'
    assert [c['factory'] for c in evaluator] == [0, 1] and vec.closed
    made = env_fn(cfg=collector[3])
    assert isinstance(made, gym.Env) and made.spec.id == 'Pendulum-v1'
    made.close()
    triple = (env_fn, collector, evaluator)
    assert vec_env_setting(env_cfg, triple) == triple  # DI-engine's as it is


def test_forms_that_cannot_run_say_what_would(tmp_path):
    env_cfg = EasyDict(collector_env_num=2, evaluator_env_num=1, manager=EasyDict(type='base'))
    native = gym.make_vec('CartPole-v1', num_envs=2, vectorization_mode='vector_entry_point')
    with pytest.raises(ConfigError, match=r"CartPoleVectorEnv has no per-env factories.*vectorization_mode='sync'.*"
                                          r"env.collector_env_num.*create_config.env_manager.type"):
        vec_env_setting(env_cfg, native)
    native.close()
    with pytest.raises(ConfigError, match=r"env_setting\[1\] is 3 \(int\); expected a gymnasium env, a function"):
        vec_env_setting(env_cfg, [_pendulum, 3])
    with pytest.raises(ConfigError, match=r"env.env_id must be a gymnasium id .*got a SyncVectorEnv: give envs made "
                                          r"in Python as serial_pipeline\(cfg, env_setting=...\)"):
        vec = gym.make_vec('Pendulum-v1', num_envs=2)
        main, create = _cfg(tmp_path, 'unused')
        main['env']['env_id'] = vec
        compile_config(main, create_cfg=dict(create, env=dict(type='gymnasium')), save_cfg=False)
    vec.close()


def test_a_batched_action_space_is_not_advised_to_be_flattened():
    """A Box of N rows (N envs glued, or one agent's matrix) is refused; the advice separates the envs rather than
    flattening them into one agent."""
    import numpy as np
    from entry.kit.env_check import _action_size
    with pytest.raises(ConfigError) as info:
        _action_size(EasyDict(type='sac'), gym.spaces.Box(-1, 1, (3, 1), np.float32), "'Glued-v0'")
    message = str(info.value)
    assert 'env.collector_env_num=N' in message and 'env_setting=the VectorEnv' in message
    assert 'flatten' not in message
