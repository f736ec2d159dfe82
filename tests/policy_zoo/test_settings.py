"""No setting accepted only to be ignored: each declared SAC-family key works (reward_scale, init_w,
collector_logit) or is refused at compile time (multi_agent without an agent axis, on_policy, unroll_len > 1 without a
recurrent model)."""
from __future__ import annotations

import os
import pprint
import subprocess

import pytest
import torch

from ding_lite.config import ConfigError, compile_config
from ding_lite.data import default_collate
from policy_zoo import DiscreteSACPolicy, SACPolicy
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _policy_cfg(policy: str = 'sac', **sections):
    main = dict(exp_name='unused', policy=dict(model=dict(obs_shape=3, action_shape=2, actor_head_hidden_size=32,
                                                          critic_head_hidden_size=32), **sections))
    return compile_config(main, create_cfg=dict(policy=dict(type=policy)), save_cfg=False).policy


@pytest.mark.parametrize('sections, message', [
    (dict(on_policy=True), r"policy.on_policy=True: ding_lite's policies are off-policy"),
    (dict(collect=dict(unroll_len=4)), r"policy.collect.unroll_len=4, .* only a recurrent model learns from"),
    (dict(transition_with_policy_data=True), r"policy.transition_with_policy_data=True: .* policy.collect.collector_logit=True"),
    (dict(command=dict(eps=0.1)), r"policy.command=\{'eps': 0.1\}: DI-engine's command mode has no counterpart"),
])
def test_settings_the_sac_family_cannot_honour_are_refused_at_compile_time(sections, message):
    for policy in ('sac', 'discrete_sac', 'sqil_sac'):
        with pytest.raises(ConfigError, match=message):
            _policy_cfg(policy, **sections)


@pytest.mark.parametrize('policy, message', [
    ('sac', r"policy 'masac' \(policy.multi_agent=True: MASAC\) reads DI-engine's multi-agent observations"),
    ('discrete_sac', r"policy 'discrete_masac' \(policy.multi_agent=True: MASAC\) reads"),
    ('sqil_sac', r"policy 'sqil_sac' has no multi-agent form")])
def test_multi_agent_needs_an_env_with_an_agent_axis_and_a_policy_with_a_masac_form(policy, message):
    main = dict(exp_name='unused', policy=dict(multi_agent=True))
    create = dict(env=dict(type='cartpole' if policy == 'discrete_sac' else 'pendulum'), policy=dict(type=policy))
    with pytest.raises(ConfigError, match=message):
        compile_config(main, create_cfg=create, save_cfg=False)


def test_a_refused_setting_is_one_error_line_at_the_command_line(tmp_path):
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {pprint.pformat(dict(TINY_PENDULUM, exp_name=str(tmp_path / 'run')))}\n"
                    f"create_config = {pprint.pformat(TINY_CREATE)}\n")
    run = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '--set', 'policy.multi_agent=True'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 1 and not os.path.exists(tmp_path / 'run')
    assert run.stderr.strip().splitlines()[-1].startswith("ding_lite: error: ConfigError: policy 'masac' (policy."
                                                          "multi_agent=True: MASAC) reads DI-engine's multi-agent")


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


def _cli(tmp_path, *sets: str, steps: int = 0, create: dict | None = None) -> subprocess.CompletedProcess:
    path = tmp_path / 'settings_cfg.py'
    path.write_text(f"main_config = {pprint.pformat(dict(TINY_PENDULUM, exp_name=str(tmp_path / 'run')))}\n"
                    f"create_config = {pprint.pformat(create or TINY_CREATE)}\n")
    budget = ['--max-env-step', str(steps)] if steps else ['--max-train-iter', '1']
    return subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), *budget,
                           *[a for s in sets for a in ('--set', s)]], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)


@pytest.mark.parametrize('sets, create, message', [
    (['policy.model.value_network=True'], None,
     "policy.model.value_network=True builds SAC-v1's state-value network, which policy 'sac' does not train: use "
     "policy type 'sac_v1'"),
    (['policy.model.value_network=True'], dict(TINY_CREATE, policy=dict(type='tqc')), "which policy 'tqc' does not"),
    (['policy.priority=True'], dict(TINY_CREATE, replay_buffer=dict(type='naive')),
     "policy.priority=True needs a prioritized replay buffer, but the replay buffer's type is 'naive'"),
    (['policy.priority_IS_weight=True'], None,
     "policy.priority_IS_weight=True weights TD errors by a prioritized buffer's importance-sampling weights: set "
     "policy.priority=True too"),
    (['policy.other.eps.start=0.5'], None, "unknown config key 'policy.other.eps'"),
    (['policy.collect.n_episode=2'], None,
     "policy.collect.n_episode=2: the pipelines collect policy.collect.n_sample transitions per call"),
])
def test_settings_that_would_be_ignored_are_one_error_line_before_anything_is_built(tmp_path, sets, create, message):
    run = _cli(tmp_path, *sets, create=create)
    assert run.returncode == 1 and not (tmp_path / 'run').exists(), run.stderr[-2000:]
    assert message in run.stderr.strip().splitlines()[-1], run.stderr[-2000:]


def test_a_fixed_alpha_warns_about_its_unused_learning_settings_and_priority_picks_the_prioritized_buffer(tmp_path):
    run = _cli(tmp_path, 'policy.learn.auto_alpha=False', 'policy.learn.learning_rate_alpha=0.01')
    assert run.returncode == 0, run.stderr[-2000:]
    assert "policy.learn.auto_alpha=False keeps alpha fixed at 0.2: learning_rate_alpha=0.01 do nothing" in run.stderr
    run = _cli(tmp_path, 'policy.priority=True', 'policy.priority_IS_weight=True', 'exp_name=' + str(tmp_path / 'p'),
               steps=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "'replay_buffer': {'type': 'priority'" in (tmp_path / 'p' / 'total_config.py').read_text()
    state = torch.load(tmp_path / 'p' / 'ckpt' / 'ckpt_last.buffer.pth.tar', weights_only=False)
    priority = state['replay_buffer']['extra']['priority'][:120]  # the learn steps' TD errors, not the initial 1s
    assert priority.min() > 0 and not torch.all(priority == priority[0])


def test_adam_betas_reach_every_optimizer_of_sac_v1(tmp_path):
    run = _cli(tmp_path, 'policy.learn.adam_betas=(0.5, 0.999)', create=dict(TINY_CREATE, policy=dict(type='sac_v1')))
    assert run.returncode == 0, run.stderr[-2000:]
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)
    for optimizer in ('optimizer_q', 'optimizer_policy'):  # the critics and V, and the actor
        assert tuple(state[optimizer]['param_groups'][0]['betas']) == (0.5, 0.999), optimizer
