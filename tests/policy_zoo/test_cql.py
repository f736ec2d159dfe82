"""CQL's critic loss checked by hand on a tiny batch (Kumar et al. 2020, CQL(H) with importance-sampled actions, as
DI-engine's ``cql`` computes it), continuous and discrete; what it refuses."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ding_lite.config import ConfigError, compile_config
from ding_lite.data import default_collate
from ding_lite.rl_utils import tanh_gaussian_sample
from policy_zoo import CQLPolicy, DiscreteCQLPolicy, create_policy

B, N, GAMMA, WEIGHT = 4, 3, 0.9, 2.0


def _policy(policy_type: str, obs: int, act: int, **learn):
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=obs, action_shape=act, actor_head_hidden_size=8, critic_head_hidden_size=8),
        learn=dict(dict(discount_factor=GAMMA, num_actions=N, min_q_weight=WEIGHT, batch_size=B), **learn)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type=policy_type)), save_cfg=False)
    torch.manual_seed(0)
    return create_policy(cfg.policy)


def _batch(policy, action):
    gen = torch.Generator().manual_seed(1)
    obs_dim = policy._cfg.model.obs_shape
    data = [{'obs': torch.randn(obs_dim, generator=gen), 'next_obs': torch.randn(obs_dim, generator=gen),
             'action': a, 'reward': float(i) - 1.5, 'done': i == 3} for i, a in enumerate(action)]
    return policy._preprocess_learn(default_collate(data))


def _by_hand(policy, batch):
    """CQL's TD loss, per-critic conservative gap and TD target of ``policy`` on ``batch``, computed here; the
    draws in the policy's order (the target's action, then uniform, pi(s), pi(s')) from seed 5."""
    model, target = policy._model, policy._target_model

    def q(net, obs, action):
        return net.critic(torch.cat([obs, action], -1)).squeeze(-1)          # [E, rows]
    with torch.no_grad():
        torch.manual_seed(5)
        next_action, _ = tanh_gaussian_sample(*model.actor(batch.next_obs))
        v = q(target, batch.next_obs, next_action).min(0).values               # no entropy bonus (DI-engine's)
        target_q = batch.reward + GAMMA * (1 - batch.done.float()) * v
        q_data = q(model, batch.obs, batch.action)
        td_loss = (q_data - target_q).pow(2).mean(-1).sum()
        rows, next_rows = batch.obs.repeat_interleave(N, 0), batch.next_obs.repeat_interleave(N, 0)
        uniform = torch.rand(B * N, 2) * 2 - 1
        here, log_here = tanh_gaussian_sample(*model.actor(rows))
        there, log_there = tanh_gaussian_sample(*model.actor(next_rows))
        sampled = torch.cat([(q(model, rows, uniform) - 2 * math.log(0.5)).view(2, B, N),
                             (q(model, rows, there) - log_there).view(2, B, N),
                             (q(model, rows, here) - log_here).view(2, B, N)], -1)
        gap = torch.logsumexp(sampled, -1).mean(-1) - q_data.mean(-1)           # per critic
    return td_loss, gap, target_q


_ACTIONS = [torch.tensor([0.5, -0.5]), torch.tensor([0.1, 0.2]), torch.tensor([-0.9, 0.0]), torch.tensor([0.3, 0.3])]


def test_cql_critic_loss_by_hand():
    policy = _policy('cql', 3, 2)
    assert type(policy) is CQLPolicy and policy._cfg.random_collect_size == 0
    batch = _batch(policy, _ACTIONS)
    td_loss, gap, target_q = _by_hand(policy, batch)
    torch.manual_seed(5)
    loss, _, _, got_target = policy._critic_loss(batch)
    assert loss.item() == pytest.approx((td_loss + WEIGHT * gap.sum()).item(), rel=1e-5)
    assert torch.allclose(got_target, target_q)
    assert all(torch.isfinite(v).all() for v in policy.update(batch).values())


@pytest.mark.parametrize('thresh, rises', [(0.01, True), (1000.0, False)])
def test_cql_with_lagrange_learns_the_weight_that_holds_the_gap_at_the_threshold(thresh, rises, tmp_path):
    """The paper's Lagrange form (DI-engine's ``with_lagrange``): the critics' loss is ``alpha' (w gap - tau)`` per
    critic with alpha' = 1 at first; alpha' rises while the weighted gap exceeds tau and falls below it, and a
    checkpoint keeps it."""
    policy = _policy('cql', 3, 2, with_lagrange=True, lagrange_thresh=thresh)
    batch = _batch(policy, _ACTIONS)
    td_loss, gap, _ = _by_hand(policy, batch)
    assert bool(WEIGHT * gap.mean() > thresh) is rises  # the two cases stand on either side of the threshold
    torch.manual_seed(5)
    loss = policy._critic_loss(batch)[0]
    assert loss.item() == pytest.approx((td_loss + (WEIGHT * gap - thresh).sum()).item(), rel=1e-5)
    stats = policy.update(batch)  # alpha' steps after the critics, on the gradient their backward pass gave it
    assert (stats['alpha_prime'].item() > 1.0) is rises and 'alpha_prime' in policy._monitor_vars_learn()
    for _ in range(2):
        policy.update(batch)
    state = policy.learn_mode.state_dict()
    other = _policy('cql', 3, 2, with_lagrange=True, lagrange_thresh=thresh)
    other.learn_mode.load_state_dict(state)
    assert other._critic_term.alpha_prime.value.item() == policy._critic_term.alpha_prime.value.item() != 1.0


def test_discrete_cql_critic_loss_by_hand():
    policy = _policy('discrete_cql', 3, 4)
    assert type(policy) is DiscreteCQLPolicy
    batch = _batch(policy, [0, 3, 1, 2])
    model, target = policy._model, policy._target_model
    with torch.no_grad():
        pi_next = F.softmax(model.actor(batch.next_obs), -1)
        v = (pi_next * target.critic(batch.next_obs).min(0).values).sum(-1)
        target_q = batch.reward + GAMMA * (1 - batch.done.float()) * v
        q_all = model.critic(batch.obs)                                         # [E, B, n]
        q_data = q_all.gather(-1, batch.action.long().view(1, B, 1).expand(2, B, 1)).squeeze(-1)
        gap = torch.logsumexp(q_all, -1).mean(-1) - q_data.mean(-1)
        expected = (q_data - target_q).pow(2).mean(-1).sum() + WEIGHT * gap.sum()
    loss = policy._critic_loss(batch)[0]
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_cql_refuses_what_it_does_not_do():
    assert _policy('cql', 3, 2, with_lagrange=True)._critic_term.alpha_prime is None  # no threshold: off, as DI-engine has it
    with pytest.raises(ConfigError, match='num_actions must be >= 1'):
        _policy('cql', 3, 2, num_actions=0)
