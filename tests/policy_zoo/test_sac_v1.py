"""SAC-v1 against hand computations with constant-output networks, Polyak on V only, and on Pendulum."""
from __future__ import annotations

import copy

import pytest
import torch

import policy_zoo.sac as sac
import policy_zoo.sac_v1 as sac_v1
from ding_lite.config import compile_config
from ding_lite.data import default_collate
from policy_zoo import SACv1Policy
from tests.conftest import small_variant_steps_to

Q = torch.tensor([[5.0, 6.0], [7.0, 8.0]])  # 2 critics x 2 samples


def _policy():
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=3, action_shape=1, actor_head_hidden_size=8, critic_head_hidden_size=8),
        learn=dict(batch_size=2, discount_factor=0.9, alpha=0.5)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type='sac_v1')), save_cfg=False)
    return SACv1Policy(cfg.policy, enable_field=['learn'])


def _batch():
    return default_collate([{'obs': torch.randn(3), 'action': torch.zeros(1), 'reward': 1.0, 'next_obs': torch.randn(3),
                             'done': False},
                            {'obs': torch.randn(3), 'action': torch.zeros(1), 'reward': 2.0, 'next_obs': torch.randn(3),
                             'done': True}])


def test_the_v_q_and_actor_losses_and_the_q_target_reading_v_bar(monkeypatch):
    policy = _policy()
    draw = lambda mu, sigma: (torch.zeros_like(mu), torch.full(mu.shape[:1], -1.0))  # noqa: E731 (log pi = -1)
    monkeypatch.setattr(sac_v1, 'tanh_gaussian_sample', draw)
    monkeypatch.setattr(sac, 'tanh_gaussian_sample', draw)
    monkeypatch.setattr(policy, '_critic', lambda obs, action=None, target=False: Q)
    monkeypatch.setattr(policy, '_value', lambda obs, target=False: torch.tensor([10., 20.] if target else [3., 4.]))
    loss, td, q, target_q = policy._critic_loss(policy._preprocess_learn(_batch()))
    assert target_q.tolist() == [10.0, 2.0]     # r + gamma (1 - done) V_bar(s'): 1 + 0.9 * 10, 2 (done)
    assert td.tolist() == [[-5.0, 4.0], [-3.0, 6.0]]
    # Q: (25 + 16) / 2 + (9 + 36) / 2 = 43; V against min_i Q - alpha log pi = [5.5, 6.5]: (2.5^2 + 2.5^2) / 2
    assert loss.item() == pytest.approx(43.0 + 6.25)
    actor_loss, entropy, _ = policy._actor_loss(torch.zeros(2, 3))
    assert actor_loss.item() == pytest.approx(-6.0) and entropy.tolist() == [1.0, 1.0]  # mean(0.5 * -1 - [5, 6])


def test_polyak_moves_only_v_bar_and_the_temperature_stays():
    torch.manual_seed(0)
    policy = _policy()
    target = copy.deepcopy(policy._target_model.state_dict())
    online = copy.deepcopy(policy.model.state_dict())
    stats = policy.learn_mode.forward(_batch())
    after = policy._target_model.state_dict()
    for name, value in after.items():
        moved = not torch.equal(value, target[name])
        assert moved == name.startswith('value.'), name   # the Q networks have no targets; V_psi_bar follows V_psi
    assert not torch.equal(policy.model.state_dict()['value.1.weight'], online['value.1.weight'])  # V learns
    assert stats['alpha'].item() == 0.5 and 'alpha_loss' not in stats


def test_sac_v1_reaches_minus_250_on_pendulum(tmp_path):
    """At hidden 64 and batch 64 (half the zoo config's sizes, for a short test) seeds 0-4 reached -250 at
    5.5k / 4.5k / 6.0k / 5.0k / 4.5k env steps (evaluations every 500)."""
    steps = small_variant_steps_to('pendulum_sac_v1_config', tmp_path / 'v1', -250, 12_000)  # the goal
    assert steps is not None and steps <= 12_000
