"""No setting accepted only to be ignored: each declared SAC-family key works (reward_scale, init_w,
collector_logit) or is refused at compile time (multi_agent, on_policy, unroll_len > 1)."""
from __future__ import annotations

import os
import pprint
import subprocess

import pytest
import torch

from ding_lite.config import ConfigError, compile_config
from ding_lite.data import default_collate
from ding_lite.worker import SampleSerialCollector
from entry import serial_pipeline
from entry.utils import build_envs
from policy_zoo import DiscreteSACPolicy, SACPolicy
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _policy_cfg(policy: str = 'sac', **sections):
    main = dict(exp_name='unused', policy=dict(model=dict(obs_shape=3, action_shape=2, actor_head_hidden_size=32,
                                                          critic_head_hidden_size=32), **sections))
    return compile_config(main, create_cfg=dict(policy=dict(type=policy)), save_cfg=False).policy


@pytest.mark.parametrize('sections, message', [
    (dict(multi_agent=True), r"policy.multi_agent=True: ding_lite's policies are single-agent"),
    (dict(on_policy=True), r"policy.on_policy=True: ding_lite's policies are off-policy"),
    (dict(collect=dict(unroll_len=4)), r"policy.collect.unroll_len=4: the SAC family learns from single transitions"),
    (dict(transition_with_policy_data=True), r"policy.transition_with_policy_data=True: .* policy.collect.collector_logit=True"),
    (dict(command=dict(eps=0.1)), r"policy.command=\{'eps': 0.1\}: DI-engine's command mode has no counterpart"),
])
def test_settings_the_sac_family_cannot_honour_are_refused_at_compile_time(sections, message):
    for policy in ('sac', 'discrete_sac', 'sqil_sac'):
        with pytest.raises(ConfigError, match=message):
            _policy_cfg(policy, **sections)


def test_a_refused_setting_is_one_error_line_at_the_command_line(tmp_path):
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {pprint.pformat(dict(TINY_PENDULUM, exp_name=str(tmp_path / 'run')))}\n"
                    f"create_config = {pprint.pformat(TINY_CREATE)}\n")
    run = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '--set', 'policy.multi_agent=True'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 1 and not os.path.exists(tmp_path / 'run')
    assert run.stderr.strip().splitlines()[-1].startswith("ding_lite: error: ConfigError: policy.multi_agent=True: "
                                                          "ding_lite's policies are single-agent (SACPolicy)")


def test_reward_scale_multiplies_the_reward_in_the_td_target():
    policy = SACPolicy(_policy_cfg(learn=dict(reward_scale=0.1, batch_size=16)))
    batch = policy._preprocess_learn(default_collate([
        {'obs': torch.randn(3), 'action': torch.rand(2) * 2 - 1, 'reward': float(i), 'next_obs': torch.randn(3),
         'done': i % 3 == 0} for i in range(8)]))
    assert torch.equal(batch.reward, 0.1 * torch.arange(8.0))
    torch.manual_seed(0)
    v_next = policy._soft_target_v(batch.next_obs)  # the same noise as the target's own draw below
    torch.manual_seed(0)
    _, _, target_q = policy._critic_td(batch)
    torch.testing.assert_close(target_q, 0.1 * torch.arange(8.0) + 0.99 * (1 - batch.done) * v_next)


@pytest.mark.parametrize('policy_cls', [SACPolicy, DiscreteSACPolicy])
def test_init_w_is_the_uniform_init_of_the_actors_output_layers(policy_cls):
    policy_type = 'sac' if policy_cls is SACPolicy else 'discrete_sac'
    torch.manual_seed(0)
    small = policy_cls(_policy_cfg(policy_type, learn=dict(init_w=3e-3)))
    last = small.model.actor[-1]
    layers = [last.mu, last.log_sigma] if policy_cls is SACPolicy else [last]
    for layer in layers:
        assert layer.weight.abs().max() <= 3e-3 and layer.bias.abs().max() <= 3e-3
        assert layer.weight.abs().max() > 2e-3  # spread over [-3e-3, 3e-3], not zeroed
    default = policy_cls(_policy_cfg(policy_type)).model.actor[-1]
    assert (default.mu if policy_cls is SACPolicy else default).weight.abs().max() > 0.01  # torch's own bound


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
