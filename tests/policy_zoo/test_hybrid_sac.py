"""Hybrid SAC: actions of a Discrete and a Box as the policy stores them and the env takes them, and its update
against the losses written out by hand on a tiny batch (both entropies, both temperatures, the joint critic)."""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ding_lite.config import compile_config
from ding_lite.data import default_collate
from envs.hybrid import HybridActions, HybridSpace
from policy_zoo import HybridSACPolicy


def test_the_policys_flat_action_becomes_the_envs_tuple_or_dict():
    box = gym.spaces.Box(np.array([0.0, -2.0], np.float32), np.array([1.0, 2.0], np.float32))
    choice = gym.spaces.Discrete(3, start=1)
    for space, expected in ((gym.spaces.Tuple((choice, box)), lambda c, b: (c, b)),
                            (gym.spaces.Tuple((box, choice)), lambda c, b: (b, c)),
                            (gym.spaces.Dict(mode=choice, push=box), lambda c, b: {'mode': c, 'push': b})):
        hybrid = HybridActions.of(space)
        assert hybrid.space == HybridSpace(3, 2)
        action = hybrid.to_env(np.array([2.0, -1.0, 1.0]))
        want = expected(3, np.array([0.0, 2.0], np.float32))  # the third choice, the box's corners
        assert str(action) == str(want) and space.contains(action)
        assert space.contains(hybrid.to_env(hybrid.space.sample()))
    assert HybridActions.of(gym.spaces.Tuple((choice, choice))) is None
    assert HybridActions.of(gym.spaces.Tuple((choice, gym.spaces.Box(-1, 1, (2, 2))))) is None


def _noiseless(mu, sigma):
    """The tanh-Gaussian sample at a fixed noise (0.5): the hand-written losses draw the same."""
    u = mu + 0.5 * sigma
    log_prob = (-0.125 - sigma.log() - 0.5 * math.log(2 * math.pi) - torch.log(1 - torch.tanh(u).pow(2))).sum(-1)
    return torch.tanh(u), log_prob


def _policy(**model) -> HybridSACPolicy:
    torch.manual_seed(0)
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=3, action_shape=2, choices=3, actor_head_hidden_size=16, critic_head_hidden_size=16,
                   **model),
        learn=dict(batch_size=8, alpha=0.3, discount_factor=0.9)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type='hybrid_sac')), save_cfg=False).policy
    policy = HybridSACPolicy(cfg, enable_field=['learn', 'eval'])
    with torch.no_grad():
        policy._alpha_choice.raw.fill_(math.log(0.7))  # the two temperatures apart
    return policy


def _batch():
    g = torch.Generator().manual_seed(1)
    choice = torch.randint(0, 3, (8, 1), generator=g).float()
    return default_collate([{'obs': torch.randn(3, generator=g), 'reward': float(torch.randn((), generator=g)),
                             'action': torch.cat([choice[i], torch.rand(2, generator=g) * 2 - 1]),
                             'next_obs': torch.randn(3, generator=g), 'done': i % 3 == 0} for i in range(8)])


def test_the_critics_loss_is_the_papers_with_exact_expectations_over_the_choice(monkeypatch):
    monkeypatch.setattr('policy_zoo.hybrid_sac.tanh_gaussian_sample', _noiseless)
    policy, batch = _policy(), _batch()
    model, target = policy._model, policy._target_model
    with torch.no_grad():
        mu, sigma, logit = model.actor(batch.next_obs)
        log_pi = F.log_softmax(logit, -1)
        box, log_prob = _noiseless(mu, sigma)
        q_next = target.forward({'obs': batch.next_obs, 'action': box}, mode='compute_critic')['q_value'].min(0).values
        v = (log_pi.exp() * (q_next - 0.7 * log_pi)).sum(-1) - 0.3 * log_prob
        y = batch.reward + 0.9 * (1 - batch.done.float()) * v
        q = model.compute_critic({'obs': batch.obs, 'action': batch.action[:, 1:]})['q_value']  # [2, 8, 3]
        taken = q.gather(2, batch.action[:, 0].long().view(1, -1, 1).expand(2, -1, 1)).squeeze(-1)
        expected = (taken - y).pow(2).mean(-1).sum()
        loss = policy._critic_loss(policy._preprocess_learn(batch))[0]
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_the_actors_loss_and_both_temperatures_follow_their_entropies(monkeypatch):
    monkeypatch.setattr('policy_zoo.hybrid_sac.tanh_gaussian_sample', _noiseless)
    policy, obs = _policy(), _batch().obs
    with torch.no_grad():
        mu, sigma, logit = policy._model.actor(obs)
        log_pi = F.log_softmax(logit, -1)
        box, log_prob = _noiseless(mu, sigma)
        q = policy._model.compute_critic({'obs': obs, 'action': box})['q_value'].min(0).values
        expected = ((log_pi.exp() * (0.7 * log_pi - q)).sum(-1) + 0.3 * log_prob).mean()
        choice_entropy = -(log_pi.exp() * log_pi).sum(-1)
    loss, entropy, stats = policy._actor_loss(obs)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    torch.testing.assert_close(entropy, -log_prob)  # the Box's entropy, for SAC's temperature
    assert stats['choice_entropy'].item() == pytest.approx(choice_entropy.mean().item(), rel=1e-5)
    assert policy._alpha_choice.target_entropy == pytest.approx(0.89 * math.log(3))  # discrete SAC's ratio
    assert policy._alpha.target_entropy == -2.0
    before = (policy._alpha.value.item(), policy._alpha_choice.value.item())
    stats = policy.learn_mode.forward(_batch())
    after = (policy._alpha.value.item(), policy._alpha_choice.value.item())
    # each temperature falls while its entropy is above its target, rises while below
    for gap, old, new in ((stats['entropy'].item() + 2.0, before[0], after[0]),
                          (stats['choice_entropy'].item() - 0.89 * math.log(3), before[1], after[1])):
        assert (new < old) == (gap > 0) and new != old
    assert {'alpha_choice', 'alpha_choice_loss', 'choice_entropy'} <= set(stats)


def test_a_checkpoint_holds_the_choices_temperature():
    policy = _policy()
    policy.learn_mode.forward(_batch())
    state = policy.learn_mode.state_dict()
    fresh = _policy()
    fresh.learn_mode.load_state_dict(state)
    assert fresh._alpha_choice.value.item() == policy._alpha_choice.value.item() != 0.7


def test_a_gaussian_per_choice_values_each_choice_at_its_own_box(monkeypatch):
    monkeypatch.setattr('policy_zoo.hybrid_sac.tanh_gaussian_sample', _noiseless)
    policy, batch = _policy(box_per_choice=True), _batch()
    model, target = policy._model, policy._target_model
    with torch.no_grad():
        out = model.compute_actor(batch.next_obs)
        mu, sigma = out['logit']
        assert mu.shape == (8, 3, 2)
        log_pi = F.log_softmax(out['choice_logit'], -1)
        v = torch.zeros(8)
        for k in range(3):  # each choice's own Box draw, valued as that choice
            box, log_prob = _noiseless(mu[:, k], sigma[:, k])
            q = target.forward({'obs': batch.next_obs, 'action': box}, mode='compute_critic')['q_value']
            v += log_pi[:, k].exp() * (q[..., k].min(0).values - 0.7 * log_pi[:, k] - 0.3 * log_prob)
        torch.testing.assert_close(policy._soft_target_v(batch.next_obs), v, rtol=1e-5, atol=1e-6)
        greedy = policy.eval_mode.forward_batch(batch.obs)['action']  # the likeliest choice, its own tanh(mu)
        out = model.compute_actor(batch.obs)
        choice = out['choice_logit'].argmax(-1)
        torch.testing.assert_close(greedy[:, 0], choice.float())
        torch.testing.assert_close(greedy[:, 1:], torch.tanh(out['logit'][0][torch.arange(8), choice]))
    stats = policy.learn_mode.forward(batch)
    assert all(torch.isfinite(v).all() for v in stats.values())
    entropy = policy._collect_entropy({'logit': torch.stack(out['logit'], 1), 'choice_logit': out['choice_logit']}, {})
    assert entropy.shape == (8,) and torch.isfinite(entropy).all()  # the collect entropy's log, one value a row
