"""Reward signals (issue 39): RND's reward and training, a critic head per signal with its own strength, gamma and
use of done, and the checks of the config."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import compile_config
from ding_lite.reward_model import RNDRewardModel
from ding_lite.utils.default_config import ConfigError
from policy_zoo import create_policy
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def test_rnd_reward_is_the_squared_error_and_only_the_predictor_learns():
    """Before training the reward is the squared error (the errors' running spread starts at 1)."""
    torch.manual_seed(0)
    rnd = RNDRewardModel(dict(RNDRewardModel.default_config(), encoding_size=4), obs_size=3, action_size=1)
    batch = SimpleNamespace(next_obs=torch.randn(16, 3) * torch.tensor([1.0, 0.01, 100.0]))
    rnd.obs_norm.update(batch.next_obs)
    normalised = ((batch.next_obs - batch.next_obs.mean(0)) / batch.next_obs.std(0, unbiased=False)).clamp(-5, 5)
    by_hand = (rnd.predictor(normalised) - rnd.target(normalised)).pow(2).sum(-1)
    reward = rnd.reward(batch)
    assert torch.allclose(reward, by_hand.detach(), atol=1e-5) and not reward.requires_grad
    target = [p.clone() for p in rnd.target.parameters()]
    rnd.optimizer = torch.optim.Adam(rnd.predictor.parameters(), lr=1e-2)
    for _ in range(100):
        rnd.train_step(batch)
    assert all(torch.equal(a, b) for a, b in zip(target, rnd.target.parameters()))
    assert all(p.grad is None for p in rnd.target.parameters())
    with torch.no_grad():
        assert rnd._error(batch).mean() < 0.1 * reward.mean()  # a state seen often is no longer novel
    assert rnd.reward(batch).mean() < 0.5 * reward.mean()  # in units of the errors' running spread


def _policy(tmp_path, **signals):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / 'signals')
    main.policy.reward_signals = signals
    cfg = compile_config(main, EasyDict(copy.deepcopy(TINY_CREATE)), save_cfg=False)
    torch.manual_seed(0)
    return create_policy(cfg.policy)


def test_each_signal_has_its_own_target_strength_gamma_and_use_of_done(tmp_path):
    """Strengths (1, 0.01), gammas (0.99, 0.9), done=1: the extrinsic target is r, RND's r + 0.9 V (done ignored)."""
    policy = _policy(tmp_path, extrinsic=dict(strength=1.0, gamma=0.99), rnd=dict(strength=0.01, gamma=0.9))
    batch = policy._preprocess_learn(dict(obs=torch.randn(6, 3), next_obs=torch.randn(6, 3),
                                          action=torch.rand(6, 1) * 2 - 1, reward=torch.randn(6),
                                          done=torch.ones(6, dtype=torch.bool)))
    extrinsic = batch.reward.clone()
    batch.reward = policy._heads.rewards(batch)
    rnd = policy._heads.models['rnd'].reward(batch)
    assert torch.allclose(batch.reward, torch.stack([extrinsic, 0.01 * rnd], -1))
    torch.manual_seed(3)
    target = policy._td_target(batch)
    torch.manual_seed(3)
    v = policy._soft_target_v(batch.next_obs)  # [B, 2]: each head's soft value at s'
    assert torch.allclose(target[:, 0], extrinsic)
    assert torch.allclose(target[:, 1], 0.01 * rnd + 0.9 * v[:, 1])
    q = policy._critic(batch.obs, batch.action)
    assert q.shape == (2, 6, 2)  # twin critics, a head per signal
    action_q = policy._actor_q(batch.obs, batch.action)
    assert torch.allclose(action_q, q.min(0).values.mean(-1))  # the actor maximises the mean over the heads


def test_curiosity_rewards_nothing_untrained_and_clips_as_ml_agents():
    from ding_lite.reward_model import CuriosityRewardModel
    torch.manual_seed(0)
    model = CuriosityRewardModel(dict(CuriosityRewardModel.default_config(), strength=4.0), obs_size=3, action_size=2)
    batch = SimpleNamespace(obs=torch.randn(32, 3), next_obs=100 * torch.randn(32, 3), action=torch.rand(32, 2))
    assert torch.equal(model.reward(batch), torch.zeros(32))  # ML-Agents: zero until the first update
    stats = model.train_step(batch)
    assert set(stats) == {'forward_loss', 'inverse_loss'}
    reward = model.reward(batch)
    state, next_state, action = model._encode(batch)
    error = model._forward_error(state, next_state, action).detach()
    assert torch.equal(reward, error.clamp(max=0.25)) and (error > 0.25).any()  # at most 1 / strength


def test_gail_rewards_are_positive_and_the_expert_is_rewarded_more_after_training(tmp_path):
    from ding_lite.data import save_demo
    from ding_lite.reward_model import GAILRewardModel
    torch.manual_seed(0)
    expert = dict(obs=torch.randn(200, 3) + 2.0, action=torch.rand(200, 1), reward=torch.zeros(200),
                  next_obs=torch.randn(200, 3), done=torch.zeros(200, dtype=torch.bool))
    save_demo(str(tmp_path / 'demo.pt'), expert, env_id='Pendulum-v1')
    for vail in (False, True):
        cfg = dict(GAILRewardModel.default_config(), demo_path=str(tmp_path / 'demo.pt'), use_actions=True,
                   use_vail=vail)
        model = GAILRewardModel(cfg, obs_size=3, action_size=1)
        policy = SimpleNamespace(obs=torch.randn(64, 3) - 2.0, action=torch.rand(64, 1), done=torch.zeros(64))
        for _ in range(30):
            model.train_step(policy)
        as_expert = SimpleNamespace(obs=expert['obs'][:64], action=expert['action'][:64], done=torch.zeros(64))
        assert (model.reward(policy) >= 0).all()
        assert model.reward(as_expert).mean() > model.reward(policy).mean()
    with pytest.raises(ConfigError, match='GAIL needs a demonstration file'):
        GAILRewardModel.check_config(dict(GAILRewardModel.default_config(), demo_path=str(tmp_path / 'missing.pt')))


def test_behavioural_cloning_loss_by_hand_and_its_weight_halves_at_half_its_steps(tmp_path):
    from ding_lite.data import save_demo
    from ding_lite.rl_utils.cloning import BehaviouralCloning
    from ding_lite.rl_utils import tanh_gaussian_sample
    torch.manual_seed(0)
    demo = dict(obs=torch.randn(50, 3), action=torch.rand(50, 1) * 2 - 1, reward=torch.zeros(50),
                next_obs=torch.randn(50, 3), done=torch.zeros(50, dtype=torch.bool))
    save_demo(str(tmp_path / 'demo.pt'), demo, env_id='Pendulum-v1')
    bc = BehaviouralCloning(dict(demo_path=str(tmp_path / 'demo.pt'), strength=0.5, steps=1000, batch_size=8),
                            obs_size=3, discrete=False, batch_size=256, device=torch.device('cpu'))
    assert bc.weight(0) == 0.5 and bc.weight(500) == 0.25 and bc.weight(2000) == 0.0
    actor = torch.nn.Linear(3, 2)
    mu_sigma = lambda obs: (actor(obs)[:, :1], actor(obs)[:, 1:].exp())  # noqa: E731
    torch.manual_seed(1)
    weighted, loss = bc.loss(mu_sigma, step=500)
    torch.manual_seed(1)
    rows = torch.randint(50, (8,))
    action = tanh_gaussian_sample(*mu_sigma(demo['obs'][rows]))[0]
    by_hand = (action - demo['action'][rows]).pow(2).mean()
    assert torch.allclose(loss, by_hand) and torch.allclose(weighted, 0.25 * by_hand) and weighted.requires_grad
    with pytest.raises(ConfigError, match='demo_path'):
        BehaviouralCloning(dict(strength=1.0), 3, False, 8, torch.device('cpu'))
