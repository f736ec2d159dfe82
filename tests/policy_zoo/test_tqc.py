"""TQC against hand computations with constant-output critics (TorchRL's contract example), and on Pendulum."""
from __future__ import annotations

import pytest
import torch

import policy_zoo.tqc as tqc
from ding_lite.config import ConfigError, compile_config
from ding_lite.data import default_collate
from policy_zoo import TQCPolicy
from tests.conftest import small_variant_steps_to

ATOMS = torch.tensor([[0.0, 100.0, 101.0], [1.0, 2.0, 3.0]])  # 2 critics x 3 quantiles


def _policy(**learn):
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=3, action_shape=1, actor_head_hidden_size=8, critic_head_hidden_size=8, n_critics=2,
                   n_quantiles=3),
        learn=dict(dict(batch_size=1, discount_factor=1.0, top_quantiles_to_drop=1), **learn)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type='tqc')), save_cfg=False)
    return TQCPolicy(cfg.policy, enable_field=['learn'])


def _batch():
    return default_collate([{'obs': torch.zeros(3), 'action': torch.zeros(1), 'reward': 0.0,
                             'next_obs': torch.zeros(3), 'done': False}])


def test_target_loss_and_gradient_follow_the_mean_over_everything_convention(monkeypatch):
    policy = _policy(alpha=0.5, auto_alpha=False)
    monkeypatch.setattr(tqc, 'tanh_gaussian_sample', lambda mu, sigma: (torch.zeros_like(mu), torch.full(
        mu.shape[:1], -2.0)))                                            # log pi = -2: alpha * log pi = -1
    monkeypatch.setattr(policy, '_critic', lambda obs, action=None, target=False: ATOMS[:, None, :])
    target = policy._soft_target_v(torch.zeros(1, 3))
    assert target.tolist() == [[1.0, 2.0, 3.0, 4.0]]  # pooled, sorted, top 1 per critic dropped, minus alpha log pi

    policy = _policy()
    monkeypatch.setattr(policy, '_soft_target_v', lambda next_obs: torch.tensor([[0.0, 1.0, 2.0, 3.0]]))
    quantiles = ATOMS[:, None, :].clone().requires_grad_(True)
    monkeypatch.setattr(policy, '_q_pred', lambda batch: quantiles)
    loss, td, q, target_q = policy._critic_loss(policy._preprocess_learn(_batch()))
    assert loss.item() == 11.0625  # TorchRL's example: 22.125 summed over critics, 11.0625 as the mean
    loss.backward()
    tau = torch.tensor([1 / 6, 1 / 2, 5 / 6])
    u = torch.tensor([0.0, 1.0, 2.0, 3.0])[None, None, :] - ATOMS[:, :, None]  # [E, M, K]
    expected = -((tau[:, None] - (u < 0).float()).abs() * u.clamp(-1, 1)).sum(-1) / u.numel()
    torch.testing.assert_close(quantiles.grad[:, 0], expected)
    torch.testing.assert_close(q, ATOMS.mean(-1, keepdim=True))
    torch.testing.assert_close(target_q, torch.tensor([1.5]))


def test_the_actor_maximises_the_mean_of_every_atom_untruncated(monkeypatch):
    policy = _policy()
    monkeypatch.setattr(policy, '_critic', lambda obs, action=None, target=False: ATOMS[:, None, :])
    assert policy._actor_q(torch.zeros(1, 3), torch.zeros(1, 1)).tolist() == [34.5]  # 207 / 6, nothing dropped


def test_a_learn_step_and_bad_settings():
    policy = _policy()
    stats = policy.learn_mode.forward(_batch())
    assert {'q_value_1', 'q_value_2', 'grad_norm_critic', 'mu'} <= set(stats)
    assert policy.model.compute_critic({'obs': torch.zeros(4, 3), 'action': torch.zeros(4, 1)})['q_value'].shape \
        == (2, 4, 3)
    with pytest.raises(ConfigError, match='tqc needs policy.model.n_quantiles > 1 and 0 <= '):
        _policy(top_quantiles_to_drop=3)


def test_tqc_reaches_minus_250_on_pendulum(tmp_path):
    """At hidden 64 and batch 64 (half the zoo config's sizes, for a short test) seeds 0-4 reached -250 at
    5.5k / 4.0k / 4.5k / 5.5k / 4.5k env steps (evaluations every 500)."""
    steps = small_variant_steps_to('pendulum_tqc_config', tmp_path / 'tqc', -250, THRESHOLD)
    assert steps is not None and steps <= THRESHOLD


THRESHOLD = 10_000  # the issue's goal; over twice the seeds' median
