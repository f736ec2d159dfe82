"""Envs as gymnasium users bring them (``env_setting``): a VectorEnv, a list of envs or factories, or DI-engine's
triple whose env_fn returns a gymnasium env."""
from __future__ import annotations

import copy

import gymnasium as gym
import pytest
from easydict import EasyDict

from ding_lite.config import ConfigError, compile_config
from envs.from_gym import vec_env_setting
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _cfg(tmp_path, name):
    main = copy.deepcopy(TINY_PENDULUM)
    main['exp_name'] = str(tmp_path / name)
    return main, copy.deepcopy(TINY_CREATE)


def _pendulum():
    return gym.make('Pendulum-v1', max_episode_steps=20)


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
