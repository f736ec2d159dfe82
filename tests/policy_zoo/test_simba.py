"""SimBa (arXiv:2410.09754): its block and encoder computed by hand, the running normaliser inside the model, the
``simba`` policy's paper values, and the network under the family's other policies."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ding_lite.config import ConfigError, compile_config
from ding_lite.model import SimbaQAC, SimbaV2QAC
from ding_lite.model.simba import SimbaBlock, simba_trunk


def _by_hand(x, norm_w, norm_b, w1, b1, w2, b2):
    """The paper's block: ``x + W2 relu(W1 LN(x))``, W1 widening four times."""
    return x + F.linear(F.relu(F.linear(F.layer_norm(x, x.shape[-1:], norm_w, norm_b), w1, b1)), w2, b2)


def test_a_block_and_each_ensemble_member_are_the_papers_residual_with_pre_layernorm():
    torch.manual_seed(0)
    block = SimbaBlock(6)
    with torch.no_grad():
        block.norm.weight.uniform_(0.5, 1.5), block.norm.bias.uniform_(-0.5, 0.5)  # not the identity
    x = torch.randn(5, 6)
    expected = _by_hand(x, block.norm.weight, block.norm.bias, block.up.weight, block.up.bias, block.down.weight,
                        block.down.bias)
    assert block.up.weight.shape == (24, 6) and torch.allclose(block(x), expected, atol=1e-6)
    members = SimbaBlock(6, ensemble_size=3)
    out = members(x.expand(3, -1, -1))
    for e in range(3):  # member e with its own LayerNorm and weights ([E, in, out] batched layout)
        own = _by_hand(x, members.norm.weight[e, 0], members.norm.bias[e, 0], members.up.weight[e].T,
                       members.up.bias[e, 0], members.down.weight[e].T, members.down.bias[e, 0])
        assert torch.allclose(out[e], own, atol=1e-5)


def test_the_encoder_ends_in_a_layernorm_and_the_model_takes_the_familys_critics():
    trunk = simba_trunk(3, 8, 2)
    assert [type(m).__name__ for m in trunk] == ['Linear', 'SimbaBlock', 'SimbaBlock', 'LayerNorm']
    features = trunk(torch.randn(4, 3))
    assert torch.allclose(features.mean(-1), torch.zeros(4), atol=1e-5)  # LayerNorm's output (unit affine)
    obs, action = torch.randn(4, 3), torch.rand(4, 2) * 2 - 1
    for kwargs, shape in [({}, (2, 4)), ({'n_critics': 10}, (10, 4)), ({'n_quantiles': 5}, (2, 4, 5)),
                          ({'reward_heads': 3}, (2, 4, 3)), ({'twin_critic': False}, (4,))]:
        model = SimbaQAC(3, 2, actor_hidden_dim=8, critic_hidden_dim=8, **kwargs)
        assert model.compute_critic({'obs': obs, 'action': action})['q_value'].shape == shape
    mu, sigma = SimbaQAC(3, 2, actor_hidden_dim=8, critic_hidden_dim=8).compute_actor(obs)['logit']
    assert mu.shape == sigma.shape == (4, 2)
    paper = SimbaQAC(3, 2)  # the paper's sizes: actor 1 block of 128, critics 2 blocks of 512
    assert len(paper.actor[0]) == 3 and paper.actor[0][0].out_features == 128
    assert len(paper.critic[0]) == 4 and paper.critic[0][0].weight.shape == (2, 5, 512)


@pytest.mark.parametrize('policy_type, model_type', [('sac', 'simba_qac'), ('simba_v2', None)])
def test_a_di_engine_sac_model_config_takes_the_simba_networks(policy_type, model_type):
    """DI-engine's SAC configs name ``action_space='reparameterization'``: the SimBa models take it (their actor
    is that tanh-Gaussian); the default network's sizes are refused with the SimBa name for them."""
    model = dict(obs_shape=3, action_shape=1, twin_critic=True, action_space='reparameterization')
    model |= {'type': model_type} if model_type else {}
    compiled = compile_config(dict(policy=dict(model=model)), create_cfg=dict(policy=dict(type=policy_type)),
                              save_cfg=False).policy.model
    assert compiled.action_space == 'reparameterization'
    with pytest.raises(ConfigError, match="actor_head_hidden_size'; did you mean 'policy.model.actor_hidden_dim'"):
        compile_config(dict(policy=dict(model=model | dict(actor_head_hidden_size=128))),
                       create_cfg=dict(policy=dict(type=policy_type)), save_cfg=False)
    for cls in (SimbaQAC, SimbaV2QAC):
        with pytest.raises(ValueError, match="supports action_space='reparameterization'.*got 'regression'"):
            cls(3, 1, action_space='regression')
