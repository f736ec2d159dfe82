"""MASAC's update checked by hand on a tiny batch: the team's reward broadcast over the agents, masked actions at
-1e8, the critics reading the global state (a centralised critic) and, for Box actions, each agent's own action."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ding_lite.config import ConfigError, compile_config
from policy_zoo import DiscreteMASACPolicy, MASACPolicy, create_policy

A, N0, N1, GAMMA = 2, 4, 6, 0.9


def _policy(tmp_path, policy_type: str, action_shape: int, **model):
    main = dict(exp_name=str(tmp_path), env=dict(n_agent=A, n_landmark=A),
                policy=dict(multi_agent=True, model=dict(agent_obs_shape=N0, global_obs_shape=N1,
                                                         action_shape=action_shape, twin_critic=True, **model),
                            learn=dict(discount_factor=GAMMA, batch_size=2)))
    cfg = compile_config(main, create_cfg=dict(env=dict(type='petting_zoo'), policy=dict(type=policy_type)),
                         save_cfg=False)
    torch.manual_seed(0)
    return create_policy(cfg.policy)


def _obs(gen: np.random.Generator, n: int, mask: np.ndarray | None = None) -> dict:
    obs = {'agent_state': gen.normal(size=(A, N0)).astype(np.float32),
           'global_state': gen.normal(size=N1).astype(np.float32)}
    if mask is not None:
        obs['action_mask'] = mask
    return obs


def _batch(policy, action: list, n: int | None = None, mask: np.ndarray | None = None):
    gen = np.random.default_rng(0)
    data = [{'obs': _obs(gen, n, mask), 'next_obs': _obs(gen, n, mask), 'action': np.asarray(a), 'reward': r,
             'done': d} for a, r, d in zip(action, [1.0, -2.0], [False, True])]
    return policy._preprocess_learn(data)


def test_discrete_masac_update_by_hand(tmp_path):
    policy = _policy(tmp_path, 'sac_discrete', 3)  # DI-engine's name, with multi_agent=True: MASAC
    assert type(policy) is DiscreteMASACPolicy and policy._model.__class__.__name__ == 'DiscreteMAQAC'
    mask = np.array([[1, 1, 1], [1, 0, 1]], np.float32)  # agent 1 may not take action 1
    batch = _batch(policy, [[0, 2], [1, 0]], mask=mask)
    model, target, alpha = policy._model, policy._target_model, policy._alpha.value.detach()

    def log_pi(obs):
        logit = model.actor(obs['agent_state'])
        return F.log_softmax(logit.masked_fill(obs['action_mask'] == 0, -1e8), -1)
    logp = log_pi(batch.next_obs)
    assert logp.exp()[:, 1, 1].max() == 0 and torch.equal(policy._log_pi(batch.next_obs), logp)
    with torch.no_grad():
        q_next = target.critic(batch.next_obs['global_state']).min(0).values          # [B, n]: one global state
        v = (logp.exp() * (q_next[:, None, :] - alpha * logp)).sum(-1)                 # [B, A]
        expected_target = batch.reward[:, None] + GAMMA * (1 - batch.done.float()[:, None]) * v
        q = model.critic(batch.obs['global_state'])[:, :, None, :].expand(-1, -1, A, -1)
        q_taken = q.gather(-1, batch.action.long()[None, ..., None].expand(2, -1, -1, 1)).squeeze(-1)
        expected_loss = (q_taken - expected_target).pow(2).mean(-1).mean(-1).sum()
    loss, td, _, target_q = policy._critic_loss(batch)
    assert loss.item() == pytest.approx(expected_loss.item(), rel=1e-5)
    assert torch.allclose(target_q, expected_target.mean(-1)) and td.shape == (2, 2)  # [E, B]: a priority each
    policy_loss, entropy, _ = policy._actor_loss(batch.obs)
    pi = log_pi(batch.obs).exp()
    with torch.no_grad():
        q_min = model.critic(batch.obs['global_state']).min(0).values[:, None, :]
    expected = (pi * (alpha * log_pi(batch.obs) - q_min)).sum(-1).mean()
    assert policy_loss.item() == pytest.approx(expected.item(), rel=1e-5) and entropy.shape == (2,)
    stats = policy.update(batch)  # a whole step runs: finite statistics, one priority per sample
    assert stats['priority'].shape == (2,) and all(torch.isfinite(v).all() for v in stats.values())


def test_the_centralised_critic_reads_the_global_state_and_each_agents_own_action(tmp_path):
    policy = _policy(tmp_path, 'sac', 2)
    assert type(policy) is MASACPolicy
    batch = _batch(policy, [[[0.1, 0.2], [0.3, -0.4]], [[0.0, 0.5], [-0.5, 0.1]]])
    q = policy._q_pred(batch)
    assert q.shape == (2, 2, A)                                                 # [E, B, A]
    other_views = {**batch.obs, 'agent_state': torch.randn_like(batch.obs['agent_state'])}
    assert torch.equal(policy._critic(other_views, batch.action), q)           # the agents' own views: not read
    moved = batch.action.clone()
    moved[:, 1] += 0.5                                                          # agent 1 acts otherwise
    q_moved = policy._critic(batch.obs, moved)
    assert torch.equal(q_moved[..., 0], q[..., 0]) and not torch.equal(q_moved[..., 1], q[..., 1])
    other_state = {**batch.obs, 'global_state': batch.obs['global_state'] + 1}
    assert not torch.equal(policy._critic(other_state, batch.action), q)
    _, _, _, target_q = policy._critic_loss(batch)
    with torch.no_grad():  # done's sample: the team's reward alone, for every agent
        assert target_q[1].item() == pytest.approx(-2.0)
    stats = policy.update(batch)
    assert all(torch.isfinite(v).all() for v in stats.values())


def test_multi_agent_is_refused_where_a_policy_has_no_such_form(tmp_path):
    main = dict(exp_name=str(tmp_path), policy=dict(multi_agent=True))
    with pytest.raises(ConfigError, match="policy 'tqc' has no multi-agent form"):
        compile_config(main, create_cfg=dict(env=dict(type='petting_zoo'), policy=dict(type='tqc')), save_cfg=False)
