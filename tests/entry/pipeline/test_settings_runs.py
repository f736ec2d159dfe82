"""Settings as a user runs it: the tests of ``tests.policy_zoo.test_settings`` that train or load through ``entry``
(the core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import pytest
import torch

from ding_lite.config import ConfigError, compile_config
from ding_lite.worker import SampleSerialCollector
from entry import serial_pipeline
from entry.kit.run_parts import build_envs
from policy_zoo import SACPolicy
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def test_collector_logit_keeps_sacs_mu_and_sigma_in_the_transitions(tmp_path):
    main = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'logit'))
    main['policy'] = dict(main['policy'], collect=dict(n_sample=4, collector_logit=True))
    cfg = compile_config(main, create_cfg=TINY_CREATE, save_cfg=False)
    policy = SACPolicy(cfg.policy)
    collector_env, evaluator_env = build_envs(cfg)
    evaluator_env.close()
    collector = SampleSerialCollector(cfg.policy.collect.collector, collector_env, policy.collect_mode,
                                      exp_name=cfg.exp_name)
    batch = collector.collect_batch(8)
    collector.close()
    logit = torch.as_tensor(batch['logit'])
    mu, sigma = policy.model.compute_actor(torch.as_tensor(batch['obs']))['logit']
    assert logit.shape == (len(batch['obs']), 2, 1)
    torch.testing.assert_close(logit[:, 0], mu.detach())
    torch.testing.assert_close(logit[:, 1], sigma.detach())


def test_declared_keys_that_cannot_differ_are_refused_and_train_iterations_caps_the_run(tiny_pendulum):
    main, create = tiny_pendulum
    main.env.manager = dict(wait_num=2)
    with pytest.raises(ConfigError, match=r'env.manager.wait_num=2 is DI-engine.s asynchronous stepping'):
        compile_config(main, create_cfg=dict(create, env_manager=dict(type='subprocess')), save_cfg=False)
    del main.env['manager']
    main.policy.collect.env_num = 4  # DI-engine's copy of the env's count: set from it, as DI-engine does
    assert compile_config(main, create_cfg=create, save_cfg=False).policy.collect.env_num == 2
    main.policy.learn.learner.train_iterations = 7
    serial_pipeline((main, create), seed=0)
    assert 'iter 7 ' in open(f'{main.exp_name}/log/learner.txt').read().splitlines()[-1]


def test_init_w_initialises_a_model_given_to_the_pipeline(tiny_pendulum):
    from ding_lite.model import ContinuousQAC
    main, create = tiny_pendulum
    main.policy.learn.init_w = 3e-3
    main.policy.learn.batch_size = 64  # more than the warm-up and a round hold: no learn step moves the weights
    given = ContinuousQAC(3, 1, twin_critic=True, actor_head_hidden_size=16, critic_head_hidden_size=16)
    assert given.actor[-1].mu.weight.abs().max() > 0.01  # torch's own bound, before
    serial_pipeline((main, create), seed=0, model=given, max_env_step=1)
    assert given.actor[-1].mu.weight.abs().max() <= 3e-3 and given.actor[-1].log_sigma.bias.abs().max() <= 3e-3
