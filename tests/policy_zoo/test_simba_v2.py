"""SimbaV2 (arXiv:2502.15280) piece by piece, each computed by hand: the hyperspherical projection and the scalers,
the embedder and the LERP block, the categorical target's projection, the reward scaler and the learning-rate
schedule."""
from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from easydict import EasyDict

from ding_lite.config import compile_config
from ding_lite.data.collate import default_collate
from ding_lite.model.simba_v2 import HyperEmbedder, HyperLERPBlock, HyperLinear, Scaler, SimbaV2QAC
from policy_zoo import create_policy
from policy_zoo.simba_v2 import project_distribution
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _unit(x):
    return x / x.norm(dim=-1, keepdim=True)


def test_weights_go_back_onto_the_sphere_after_a_step_and_an_ensemble_member_is_a_single_layer():
    torch.manual_seed(0)
    layer = HyperLinear(5, 4)
    assert torch.allclose(layer.weight.norm(dim=-1), torch.ones(4))  # projected at initialisation
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.1)
    layer(torch.randn(3, 5)).pow(2).sum().backward()
    optimizer.step()
    assert not torch.allclose(layer.weight.norm(dim=-1), torch.ones(4))  # the step left the sphere
    layer.project()
    assert torch.allclose(layer.weight.norm(dim=-1), torch.ones(4), atol=1e-6)
    members, x = HyperLinear(5, 4, ensemble_size=3), torch.randn(2, 5)
    out = members(x)
    assert all(torch.allclose(out[e], x @ members.weight[e].T, atol=1e-6) for e in range(3))


def test_a_scaler_starts_at_init_and_is_stored_at_its_scale():
    scaler = Scaler(4, init=0.5, scale=0.1)
    assert torch.allclose(scaler.scaler, torch.full((4,), 0.1))
    assert torch.allclose(scaler(torch.ones(2, 4)), torch.full((2, 4), 0.5))  # s * init / scale = init at first


def test_the_embedder_and_a_lerp_block_by_hand():
    torch.manual_seed(0)
    embed, x = HyperEmbedder(3, 8, c_shift=3.0), torch.randn(5, 3)
    with torch.no_grad():
        embed.scaler.scaler.uniform_(0.1, 0.9)
    shifted = _unit(torch.cat([x, torch.full((5, 1), 3.0)], -1))
    expected = _unit(shifted @ embed.linear.weight.T * embed.scaler.scaler * embed.scaler.forward_scale)
    assert torch.allclose(embed(x), expected, atol=1e-6)
    block, h = HyperLERPBlock(8, blocks=2), _unit(torch.randn(5, 8))
    assert torch.allclose(block.alpha(torch.ones(8)), torch.full((8,), 1 / 3))  # alpha starts at 1 / (blocks + 1)
    up = F.relu(h @ block.up.weight.T * block.up_scaler.scaler * block.up_scaler.forward_scale) + 1e-8
    mlp = _unit(up @ block.down.weight.T)
    alpha = block.alpha.scaler * block.alpha.forward_scale
    assert torch.allclose(block(h), _unit(h + alpha * (mlp - h)), atol=1e-6)
    assert torch.allclose(block(h).norm(dim=-1), torch.ones(5))


def test_the_categorical_target_is_projected_onto_the_support_as_c51():
    support = torch.tensor([-1.0, 0.0, 1.0])
    atoms = torch.tensor([[0.5, -2.0, 1.0]])         # between two bins; below the support; on a bin
    probs = torch.tensor([[0.2, 0.3, 0.5]])
    assert torch.allclose(project_distribution(atoms, probs, support), torch.tensor([[0.3, 0.1, 0.6]]))
    atoms, probs = torch.rand(6, 11) * 10 - 5, torch.rand(6, 11).softmax(-1)  # inside the support: the mean is kept
    target = project_distribution(atoms, probs, torch.linspace(-5, 5, 11))
    assert torch.allclose(target.sum(-1), torch.ones(6))  # mass kept
    assert torch.allclose((target * torch.linspace(-5, 5, 11)).sum(-1), (atoms * probs).sum(-1), atol=1e-5)  # mean


def _policy(tmp_path, **learn):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path)
    main.policy.model = EasyDict(obs_shape=3, action_shape=1, actor_hidden_dim=8, critic_hidden_dim=8, num_bins=11)
    main.policy.learn.update(learn)
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.policy.type = 'simba_v2'
    return create_policy(compile_config(main, create_cfg=create, save_cfg=False).policy)


def _batch(n=16):
    torch.manual_seed(1)
    return default_collate([{'obs': torch.randn(3), 'next_obs': torch.randn(3), 'action': torch.rand(1) * 2 - 1,
                             'reward': torch.randn(()), 'done': torch.tensor(False)} for _ in range(n)])


def test_the_policys_values_its_target_its_reward_scaler_and_its_schedule(tmp_path):
    torch.manual_seed(0)
    policy = _policy(tmp_path, lr_decay_steps=4)
    assert isinstance(policy._model, SimbaV2QAC) and policy._alpha.value.item() == pytest.approx(0.01)
    assert policy._alpha.target_entropy == -0.5 and policy._cfg.learn.update_per_collect == 2
    policy._model.reward_norm.update(torch.tensor([2.0, -2.0, 6.0]))  # returns' std 3.27
    batch = policy._preprocess_learn(_batch())
    scale = 1 / math.sqrt(policy._model.reward_norm.var.item() + 1e-8)
    assert torch.allclose(batch.reward, _batch().reward * scale, atol=1e-5)  # rewards over the return's std
    target = policy._target_distribution(batch)
    out = policy._critic_out(batch.next_obs, torch.zeros(16, 1), target=True)  # (shapes only)
    assert target.shape == (16, 11) and out['logit'].shape == (2, 16, 11)
    assert torch.allclose(target.sum(-1), torch.ones(16))
    rates = []
    for _ in range(6):
        policy.learn_mode.forward(_batch())
        rates.append(policy._optimizer_q.param_groups[0]['lr'])
    # linear from 1e-4 at learn step 0 to 5e-5 at step 4, then held
    assert rates == pytest.approx([1e-4, 8.75e-5, 7.5e-5, 6.25e-5, 5e-5, 5e-5])
    weights = [m.weight for m in policy._model.modules() if isinstance(m, HyperLinear)]
    assert all(torch.allclose(w.norm(dim=-1), torch.ones(w.shape[:-1]), atol=1e-5) for w in weights)  # after steps
