from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn
from torch.distributions import Normal, TanhTransform, TransformedDistribution

from ding_lite.rl_utils import Temperature, tanh_gaussian_sample
from ding_lite.rl_utils.optim import FusedAdam, make_adam


def test_tanh_gaussian_log_prob_matches_torch_distribution():
    torch.manual_seed(0)
    mu, sigma = torch.randn(64, 3), torch.rand(64, 3) + 0.1
    action, log_prob = tanh_gaussian_sample(mu, sigma)
    assert action.abs().max() < 1 and log_prob.shape == (64,)
    reference = TransformedDistribution(Normal(mu, sigma), [TanhTransform()])
    safe = action.clamp(-0.999999, 0.999999)
    torch.testing.assert_close(log_prob, reference.log_prob(safe).sum(-1), atol=2e-3, rtol=1e-3)


def test_tanh_gaussian_is_reparameterised():
    mu, sigma = torch.zeros(5, 1, requires_grad=True), torch.ones(5, 1, requires_grad=True)
    action, log_prob = tanh_gaussian_sample(mu, sigma)
    (action.sum() + log_prob.sum()).backward()
    assert mu.grad.abs().sum() > 0 and sigma.grad.abs().sum() > 0


@pytest.mark.parametrize('log_space', [True, False])
def test_temperature_gradient_direction(log_space):
    temp = Temperature(init=0.5, target_entropy=-1.0, lr=0.1, log_space=log_space)
    start = temp.value.item()
    loss = temp.update(torch.tensor([0.5, 1.5]))   # entropy 1.0 above target -1: alpha must fall
    assert temp.value.item() < start
    raw = math.log(0.5) if log_space else 0.5
    assert loss.item() == pytest.approx(raw * 2.0)  # raw * mean(entropy - target)
    for _ in range(20):
        temp.update(torch.tensor([-3.0]))         # entropy below target: alpha rises
    assert temp.value.item() > start
    assert temp.value.item() > 0


def test_temperature_linear_space_stays_positive_and_fixed_alpha():
    temp = Temperature(init=0.01, target_entropy=0.0, lr=1.0, log_space=False)
    for _ in range(5):
        temp.update(torch.tensor([10.0]))
    assert temp.value.item() > 0
    fixed = Temperature(init=0.3, target_entropy=None, lr=1.0)
    assert not fixed.learned and fixed.value.item() == pytest.approx(0.3)
    with pytest.raises(ValueError, match='alpha must be positive'):
        Temperature(init=0.0, target_entropy=None, lr=1.0)


def test_temperature_state_round_trip():
    a = Temperature(0.2, -1.0, 0.1)
    a.update(torch.tensor([2.0]))
    b = Temperature(0.7, -1.0, 0.1)
    b.load_state_dict(a.state_dict())
    assert b.value.item() == pytest.approx(a.value.item())
    a.update(torch.tensor([2.0])), b.update(torch.tensor([2.0]))   # the Adam moments came along too
    assert b.value.item() == pytest.approx(a.value.item())


def test_fused_adam_steps_as_torch_adam_and_survives_a_state_round_trip():
    """The direct fused step updates exactly as ``torch.optim.Adam(fused=True)``, also after ``load_state_dict``
    replaced its state tensors; a missing gradient takes Adam's own path (which skips that parameter)."""
    torch.manual_seed(0)
    ours, theirs = [nn.Linear(4, 3) for _ in range(2)]
    theirs.load_state_dict(ours.state_dict())
    opt_ours, opt_theirs = make_adam(ours.parameters(), 1e-2), torch.optim.Adam(theirs.parameters(), 1e-2, fused=True)
    assert isinstance(opt_ours, FusedAdam)
    for step in range(6):
        x = torch.randn(8, 4)
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            if step == 4:
                model.bias.grad = None
            opt.step()
        if step == 2:
            opt_ours.load_state_dict(copy.deepcopy(opt_ours.state_dict()))
        for a, b in zip(ours.parameters(), theirs.parameters()):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert opt_ours.state[ours.weight]['step'] == opt_theirs.state[theirs.weight]['step'] == 6
    assert opt_ours._fast_groups() is not None and ours.weight.grad is not None  # the direct path ran
    opt_ours.zero_grad()
    assert ours.weight.grad is None
