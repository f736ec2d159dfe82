from __future__ import annotations

import pytest
import torch

from ding_lite.model import ContinuousQAC, DiscreteQAC
from ding_lite.model.heads import EnsembleLinear
from ding_lite.registry import MODEL_REGISTRY


def test_registered_and_default_config_from_signature():
    assert MODEL_REGISTRY.get('continuous_qac') is ContinuousQAC
    assert MODEL_REGISTRY.get('discrete_qac') is DiscreteQAC
    cfg = ContinuousQAC.default_config()
    for key in ('obs_shape', 'action_shape', 'twin_critic', 'action_space', 'actor_head_hidden_size',
                'actor_head_layer_num', 'critic_head_hidden_size', 'critic_head_layer_num'):
        assert key in cfg
    assert cfg.obs_shape is None and cfg.twin_critic is False


@pytest.mark.parametrize('twin', [True, False])
def test_continuous_shapes(twin):
    model = ContinuousQAC(obs_shape=5, action_shape=[2], twin_critic=twin, actor_head_hidden_size=16,
                          critic_head_hidden_size=16, critic_head_layer_num=2)
    mu, sigma = model(torch.randn(7, 5), mode='compute_actor')['logit']
    assert mu.shape == sigma.shape == (7, 2) and (sigma > 0).all()
    q = model({'obs': torch.randn(7, 5), 'action': torch.randn(7, 2)}, mode='compute_critic')['q_value']
    assert q.shape == ((2, 7) if twin else (7,))
    with pytest.raises(ValueError, match="unknown forward mode 'compute_q'"):
        model(torch.randn(1, 5), mode='compute_q')


def test_log_sigma_is_clamped():
    model = ContinuousQAC(3, 1, log_sigma_min=-2.0, log_sigma_max=0.5)
    with torch.no_grad():
        model.actor[1].log_sigma.bias.fill_(100.0)
        high = model.compute_actor(torch.zeros(2, 3))['logit'][1]
        model.actor[1].log_sigma.bias.fill_(-100.0)
        low = model.compute_actor(torch.zeros(2, 3))['logit'][1]
    torch.testing.assert_close(high, torch.full_like(high, 0.5).exp())
    torch.testing.assert_close(low, torch.full_like(low, -2.0).exp())


def test_sigma_depends_on_state():
    model = ContinuousQAC(3, 1)
    sigma = model.compute_actor(torch.randn(16, 3))['logit'][1]
    assert sigma.std() > 0


def test_twin_critics_are_independent_members():
    model = ContinuousQAC(3, 1, twin_critic=True)
    q = model.compute_critic({'obs': torch.randn(4, 3), 'action': torch.randn(4, 1)})['q_value']
    assert not torch.allclose(q[0], q[1])
    q[0].sum().backward()
    first = model.critic[0].weight.grad
    assert first[0].abs().sum() > 0 and first[1].abs().sum() == 0  # member 1 gets no gradient from q[0]


@pytest.mark.parametrize('out_features', [3, 1])  # 1: a critic's head, computed without bmm on a CPU
@pytest.mark.parametrize('shared', [True, False])
def test_ensemble_linear_matches_per_member_linear(out_features, shared):
    layer = EnsembleLinear(2, 4, out_features)
    x = torch.randn(5, 4) if shared else torch.randn(2, 5, 4)
    x.requires_grad_(True)
    out = layer(x)
    assert out.shape == (2, 5, out_features)
    grad = torch.randn_like(out)
    out.backward(grad)
    weight, bias = layer.weight.detach().requires_grad_(True), layer.bias.detach().requires_grad_(True)
    x_ref = x.detach().requires_grad_(True)
    expected = torch.stack([(x_ref if shared else x_ref[e]) @ weight[e] + bias[e] for e in range(2)])
    expected.backward(grad)
    torch.testing.assert_close(out, expected)
    for got, want in [(layer.weight.grad, weight.grad), (layer.bias.grad, bias.grad), (x.grad, x_ref.grad)]:
        torch.testing.assert_close(got, want)


def test_discrete_shapes():
    model = DiscreteQAC(obs_shape=4, action_shape=3, twin_critic=True)
    assert model(torch.randn(6, 4), mode='compute_actor')['logit'].shape == (6, 3)
    assert model({'obs': torch.randn(6, 4)}, mode='compute_critic')['q_value'].shape == (2, 6, 3)
    assert DiscreteQAC(4, 3).compute_critic(torch.randn(6, 4))['q_value'].shape == (6, 3)


def test_bad_shapes_are_clear():
    with pytest.raises(ValueError, match=r'obs_shape must be a positive int or a 1-element list for vector inputs '
                                         r'\(or \[C, H, W\] for images\), got \[4, 5\]'):
        ContinuousQAC(obs_shape=[4, 5], action_shape=1)
    with pytest.raises(ValueError, match="action_space='reparameterization'"):
        ContinuousQAC(3, 1, action_space='regression')
