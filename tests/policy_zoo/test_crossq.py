"""CrossQ and its BatchRenorm against hand computations, and its modes."""
from __future__ import annotations

import math

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import default_collate
from ding_lite.model.heads import BatchRenorm
from ding_lite.rl_utils import tanh_gaussian_sample
from ding_lite.utils.default_config import ConfigError, ConfigWarning
from policy_zoo import CrossQPolicy
from tests.conftest import small_variant_steps_to

X = torch.tensor([[0.0], [4.0]])  # batch mean 2, biased variance 4 (the unbiased one is 8)


def _renorm(**kwargs):
    return BatchRenorm(1, **dict(dict(momentum=0.5, eps=0.0), **kwargs))


def test_batch_renorm_in_warm_up_is_batch_norm_and_moves_the_running_statistics():
    layer = _renorm(warmup_steps=10)
    assert layer(X).flatten().tolist() == [-1.0, 1.0]        # (x - 2) / 2
    assert layer.running_mean.item() == 1.0                   # 0 + 0.5 (2 - 0)
    assert layer.running_var.item() == 2.5                    # 1 + 0.5 (4 - 1): the biased variance
    assert layer.steps.item() == 1


def test_batch_renorm_after_warm_up_corrects_by_r_and_d_as_constants():
    layer = _renorm(warmup_steps=1)
    layer(X)                                                  # running mean 1, variance 2.5
    x = X.clone().requires_grad_()
    y = layer(x)
    sigma = math.sqrt(2.5)
    r, d = 2 / sigma, (2 - 1) / sigma                          # within [1/3, 3] and [-5, 5]: unclipped
    assert y.flatten().tolist() == pytest.approx([-1 * r + d, 1 * r + d], rel=1e-6)
    y.sum().backward()                                        # d holds no gradient: the batch mean cancels
    assert x.grad.abs().max() < 1e-6
    clipped = _renorm(warmup_steps=1, r_max=1.1, d_max=0.1)
    clipped(X)
    assert clipped(X).flatten().tolist() == pytest.approx([-1.1 + 0.1, 1.1 + 0.1], rel=1e-6)


def test_batch_renorm_in_eval_reads_the_running_statistics_and_keeps_them():
    layer = _renorm(warmup_steps=10)
    layer(X)
    layer.eval()
    assert layer(X).flatten().tolist() == pytest.approx([-1 / math.sqrt(2.5), 3 / math.sqrt(2.5)], rel=1e-6)
    assert (layer.running_mean.item(), layer.running_var.item(), layer.steps.item()) == (1.0, 2.5, 1)


def test_an_ensemble_keeps_each_members_statistics():
    layer = BatchRenorm(1, ensemble_size=2, momentum=1.0, eps=0.0)
    layer(torch.stack([X, X * 3]))                            # [E=2, B=2, 1]
    assert layer.running_mean.flatten().tolist() == [2.0, 6.0]
    assert layer.running_var.flatten().tolist() == [4.0, 36.0]


def _policy(**learn):
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=3, action_shape=1, actor_head_hidden_size=8, critic_head_hidden_size=8,
                   batch_renorm=dict(warmup_steps=5)),
        learn=dict(dict(batch_size=4), **learn)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type='crossq')), save_cfg=False)
    return CrossQPolicy(cfg.policy, enable_field=['learn', 'collect', 'eval'])


def _batch(n=4):
    return default_collate([{'obs': torch.randn(3), 'action': torch.rand(1) * 2 - 1, 'reward': float(i),
                             'next_obs': torch.randn(3), 'done': i == 0} for i in range(n)])


def _stats(module):
    return {k: v.clone() for k, v in module.state_dict().items() if 'running' in k or 'steps' in k}


def test_one_joint_critic_forward_and_the_target_from_its_second_half(monkeypatch):
    """Constant critics (Q1 = 3, Q2 = 5): the target is r + gamma (1 - done) (min - alpha log pi(a'|s'))."""
    policy = _policy(alpha=0.5, auto_alpha=False)
    critic = policy.model.critic
    with torch.no_grad():
        critic[-1].weight.zero_()
        critic[-1].bias.copy_(torch.tensor([3.0, 5.0]).reshape(2, 1, 1))
    batch = policy._preprocess_learn(_batch())
    actor_stats = _stats(policy.model.actor)
    calls, grads = [], []
    original = policy._critic

    def critic_call(obs, action=None, target=False):
        q = original(obs, action, target=target)
        calls.append((obs.shape[0], critic.training))
        q.register_hook(grads.append)
        return q
    monkeypatch.setattr(policy, '_critic', critic_call)
    torch.manual_seed(0)
    td, q, target_q = policy._critic_td(batch)
    assert calls == [(8, True)] and q.shape == (2, 4)          # one forward of [s; s'], in training mode
    torch.manual_seed(0)
    policy.model.actor.eval()
    _, log_prob = tanh_gaussian_sample(*policy._actor(batch.next_obs))
    expected = batch.reward + 0.99 * (1 - batch.done) * (3.0 - 0.5 * log_prob)
    assert torch.allclose(target_q, expected) and target_q[0] == 0.0  # done: reward alone
    assert all(torch.equal(v, _stats(policy.model.actor)[k]) for k, v in actor_stats.items())  # a' in eval mode
    assert critic[0].steps.item() == 1                         # the critics' statistics: one step, both halves
    td.pow(2).sum().backward()
    assert grads[0][:, 4:].abs().max() == 0 and grads[0][:, :4].abs().max() > 0  # only the (s, a) half


def test_the_actor_step_leaves_the_critics_statistics_and_steps_its_own():
    policy = _policy()
    batch = policy._preprocess_learn(_batch())
    critic_stats = _stats(policy.model.critic)
    policy._actor_step(batch.obs)
    assert all(torch.equal(v, _stats(policy.model.critic)[k]) for k, v in critic_stats.items())
    assert policy.model.actor[0][0].steps.item() == 1 and policy.model.critic.training


def test_updates_have_no_target_and_step_the_actor_every_policy_delay():
    policy = _policy(policy_delay=3)
    assert policy._target_model is None and 'target_model' not in policy.learn_mode.state_dict()
    for _ in range(7):
        policy.learn_mode.forward(_batch())
    steps = lambda optimizer: int(next(iter(optimizer.state.values()))['step'])  # noqa: E731
    assert steps(policy._optimizer_q) == 7 and steps(policy._optimizer_policy) == 3
    assert policy._optimizer_q.param_groups[0]['betas'] == (0.5, 0.999)
    assert policy.model.critic[0].steps.item() == 7 and policy.model.actor[0][0].steps.item() == 3
    state = policy.learn_mode.state_dict()
    fresh = _policy(policy_delay=3)
    fresh.learn_mode.load_state_dict(state)
    assert fresh.model.critic[0].steps.item() == 7            # the counter travels with the checkpoint


def test_collect_and_eval_run_on_the_running_statistics_and_keep_them():
    policy = _policy()
    policy.learn_mode.forward(_batch())
    stats = _stats(policy.model)
    obs = torch.randn(1, 3)
    first = policy.eval_mode.forward_batch(obs)['action']
    policy.collect_mode.forward_batch(torch.randn(5, 3))
    assert all(torch.equal(v, _stats(policy.model)[k]) for k, v in stats.items())
    assert torch.equal(first, policy.eval_mode.forward_batch(obs)['action'])  # one row: no batch statistics


def test_a_sac_config_switched_to_crossq_warns_of_its_unused_target_rate():
    main = dict(exp_name='unused', policy=dict(model=dict(obs_shape=3, action_shape=1),
                                               learn=dict(target_theta=0.005)))
    with pytest.warns(ConfigWarning, match='target_theta=0.005 has no effect: crossq has no target network'):
        compile_config(main, create_cfg=dict(policy=dict(type='crossq')), save_cfg=False)
    main['policy']['model']['batch_renorm'] = None
    with pytest.raises(ConfigError, match="'policy.model.batch_renorm' must be a dict, got None"):
        compile_config(main, create_cfg=dict(policy=dict(type='crossq')), save_cfg=False)


def test_reaches_minus_250_on_pendulum(tmp_path):
    """At hidden 64 and batch 64 (the zoo config's half and quarter), one update per env step, seeds 0-4 reached
    -250 at 3.5k / 3.5k / 3.0k / 2.5k / 3.5k env steps."""
    steps = small_variant_steps_to('pendulum_crossq_config', tmp_path / 'crossq', -250, THRESHOLD)
    assert steps is not None and steps <= THRESHOLD


THRESHOLD = 10_000  # the issue's goal; over twice the seeds' worst
