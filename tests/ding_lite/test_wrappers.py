from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from ding_lite.model import ContinuousQAC, DiscreteQAC, model_wrap, register_wrapper
from ding_lite.model.wrappers import ModelWrapper


class FixedLogit(nn.Module):
    def __init__(self, logit, mask=None):
        super().__init__()
        self.logit, self.mask = logit, mask

    def forward(self, x):
        out = {'logit': self.logit.expand(x.shape[0], -1)}
        if self.mask is not None:
            out['action_mask'] = self.mask.expand(x.shape[0], -1)
        return out


def test_target_momentum_is_polyak_average():
    online, target = nn.Linear(3, 2), nn.Linear(3, 2)
    expected = 0.9 * target.weight.detach().clone() + 0.1 * online.weight.detach()
    wrapped = model_wrap(target, wrapper_name='target', update_type='momentum', update_kwargs={'theta': 0.1})
    param_ids = [id(p) for p in target.parameters()]
    wrapped.update(online.state_dict())
    torch.testing.assert_close(target.weight, expected)
    assert [id(p) for p in target.parameters()] == param_ids  # in place: no new tensors
    assert not target.weight.requires_grad
    wrapped.update(online.state_dict(), direct=True)
    torch.testing.assert_close(target.bias, online.bias)


def test_target_assign_every_freq_and_buffers():
    online, target = nn.BatchNorm1d(2), nn.BatchNorm1d(2)
    online.running_mean.fill_(5.0)
    with torch.no_grad():
        online.weight.fill_(3.0)
    wrapped = model_wrap(target, 'target', update_type='assign', update_kwargs={'freq': 2})
    wrapped.update(online.state_dict())
    assert target.weight.tolist() == [1.0, 1.0] and target.running_mean.tolist() == [0.0, 0.0]
    wrapped.update(online.state_dict())
    assert target.weight.tolist() == [3.0, 3.0] and target.running_mean.tolist() == [5.0, 5.0]
    assert wrapped._update_count == 2
    wrapped.reset()                                      # DI-engine: the count stays unless one is given
    assert wrapped._update_count == 2
    wrapped.reset(target_update_count=1)
    wrapped.update({"weight": torch.zeros(2), "bias": torch.zeros(2)})  # count 1 -> 2: an assign is due
    assert wrapped._update_count == 2 and target.weight.tolist() == [0.0, 0.0]
    with torch.no_grad():
        online.weight.fill_(7.0)
    wrapped.update(online.state_dict(), direct=True)     # direct: copy now and restart the count
    assert wrapped._update_count == 0 and target.weight.tolist() == [7.0, 7.0]
    wrapped.update({'weight': torch.ones(2), 'bias': torch.zeros(2)})
    assert target.weight.tolist() == [7.0, 7.0]          # 1st of 2 after the restart: not yet


def test_target_bad_update_type():
    with pytest.raises(ValueError, match="'momentum' or 'assign'"):
        model_wrap(nn.Linear(1, 1), 'target', update_type='soft', update_kwargs={})
    with pytest.raises(ValueError, match="needs update_kwargs\\['theta'\\]"):
        model_wrap(nn.Linear(1, 1), 'target', update_type='momentum', update_kwargs={})


def test_wrappers_stack_and_forward_module_methods():
    model = DiscreteQAC(4, 3)
    wrapped = model_wrap(model_wrap(model, 'base'), 'argmax_sample')
    out = wrapped.forward(torch.randn(5, 4), mode='compute_actor')
    torch.testing.assert_close(out['action'], out['logit'].argmax(-1))
    assert wrapped.state_dict().keys() == model.state_dict().keys()
    assert len(list(wrapped.parameters())) == len(list(model.parameters()))
    wrapped.eval()
    assert not model.training
    assert wrapped.unwrapped is model
    assert isinstance(copy.deepcopy(wrapped), ModelWrapper)


def test_argmax_respects_action_mask():
    logit = torch.tensor([[5.0, 1.0, 0.0]])
    wrapped = model_wrap(FixedLogit(logit, torch.tensor([[False, True, True]])), 'argmax_sample')
    assert wrapped.forward(torch.zeros(4, 1))['action'].tolist() == [1, 1, 1, 1]


def test_multinomial_follows_softmax():
    logit = torch.log(torch.tensor([[0.7, 0.2, 0.1]]))
    actions = model_wrap(FixedLogit(logit), 'multinomial_sample').forward(torch.zeros(30000, 1))['action']
    freq = torch.bincount(actions, minlength=3).float() / actions.numel()
    torch.testing.assert_close(freq, torch.tensor([0.7, 0.2, 0.1]), atol=0.015, rtol=0)


def test_eps_greedy_multinomial_eps_one_uniform_eps_zero_softmax():
    logit = torch.log(torch.tensor([[0.85, 0.1, 0.05]]))
    wrapped = model_wrap(FixedLogit(logit), 'eps_greedy_multinomial_sample')
    uniform = wrapped.forward(torch.zeros(30000, 1), eps=1.0)['action']
    torch.testing.assert_close(torch.bincount(uniform, minlength=3).float() / 30000, torch.full((3,), 1 / 3),
                               atol=0.015, rtol=0)
    soft = wrapped.forward(torch.zeros(30000, 1), eps=0.0)['action']
    torch.testing.assert_close(torch.bincount(soft, minlength=3).float() / 30000, torch.tensor([0.85, 0.1, 0.05]),
                               atol=0.015, rtol=0)


def test_eps_per_env_row_and_mask():
    logit = torch.tensor([[10.0, -10.0, -10.0, -10.0]])  # softmax ~ always action 0
    mask = torch.tensor([[True, True, False, True]])
    wrapped = model_wrap(FixedLogit(logit, mask), 'eps_greedy_multinomial_sample')
    n = 40000
    eps = torch.tensor([0.0, 1.0]).repeat(n // 2)   # even rows never explore, odd rows always
    action = wrapped.forward(torch.zeros(n, 1), eps=eps)['action']
    assert (action[0::2] == 0).all()
    odd = torch.bincount(action[1::2], minlength=4).float() / (n // 2)
    torch.testing.assert_close(odd, torch.tensor([1 / 3, 1 / 3, 0.0, 1 / 3]), atol=0.015, rtol=0)


def test_eps_greedy_sample():
    logit = torch.tensor([[0.0, 3.0]])
    wrapped = model_wrap(FixedLogit(logit), 'eps_greedy_sample')
    assert wrapped.forward(torch.zeros(100, 1), eps=0.0)['action'].eq(1).all()
    frac = wrapped.forward(torch.zeros(20000, 1), eps=0.5)['action'].eq(0).float().mean()
    assert abs(frac - 0.25) < 0.02


def test_continuous_deterministic_and_reparam():
    torch.manual_seed(0)
    model = ContinuousQAC(3, 2)
    obs = torch.randn(4, 3)
    out = model_wrap(model, 'deterministic_sample').forward(obs, mode='compute_actor')
    torch.testing.assert_close(out['action'], out['logit'][0])
    obs = torch.zeros(20000, 3)
    out = model_wrap(model, 'reparam_sample').forward(obs, mode='compute_actor')
    mu, sigma = out['logit']
    z = (out['action'] - mu) / sigma
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    assert out['action'].requires_grad  # reparameterised: gradients flow to mu and sigma


def test_register_custom_wrapper():
    class Doubler(ModelWrapper):
        def forward(self, x):
            return self._model.forward(x) * 2

    register_wrapper('test_doubler', Doubler, force_overwrite=True)
    assert model_wrap(nn.Identity(), 'test_doubler').forward(torch.ones(1)).item() == 2
    with pytest.raises(TypeError, match='ModelWrapper subclass'):
        register_wrapper('bad', object)
    with pytest.raises(KeyError, match="did you mean 'argmax_sample'"):
        model_wrap(nn.Identity(), 'argmax_sampel')


class DictGaussian(nn.Module):
    """A DI-engine style actor head: ``logit={'mu': ..., 'sigma': ...}``."""

    def forward(self, x):
        return {'logit': {'mu': x + 1.0, 'sigma': torch.full_like(x, 0.5)}}


def test_gaussian_wrappers_accept_di_engine_dict_logit():
    x = torch.zeros(20000, 2)
    torch.testing.assert_close(model_wrap(DictGaussian(), 'deterministic_sample').forward(x)['action'], x + 1.0)
    torch.testing.assert_close(model_wrap(DictGaussian(), 'tanh_deterministic_sample').forward(x)['action'],
                               torch.tanh(x + 1.0))
    action = model_wrap(DictGaussian(), 'reparam_sample').forward(x)['action']
    assert abs(action.mean() - 1.0) < 0.02 and abs(action.std() - 0.5) < 0.02


def test_eps_greedy_multinomial_takes_di_engine_alpha():
    logit = torch.log(torch.tensor([[0.8, 0.2]]))
    wrapped = model_wrap(FixedLogit(logit), 'eps_greedy_multinomial_sample')
    hot = wrapped.forward(torch.zeros(30000, 1), eps=0.0, alpha=2.0)['action']   # softmax(logit / 2): 2/3, 1/3
    torch.testing.assert_close(torch.bincount(hot, minlength=2).float() / 30000, torch.tensor([2 / 3, 1 / 3]),
                               atol=0.015, rtol=0)


@pytest.mark.parametrize('name, kwargs', [('argmax_sample', {}), ('multinomial_sample', {}),
                                          ('eps_greedy_sample', {'eps': 0.5}),
                                          ('eps_greedy_multinomial_sample', {'eps': 0.5})])
def test_fully_masked_row_is_a_clear_error(name, kwargs):
    from ding_lite.model import NoValidActionError
    mask = torch.tensor([[True, False], [False, False], [True, True]])
    model = FixedLogit(torch.zeros(1, 2))
    model.forward = lambda x: {'logit': torch.zeros(3, 2), 'action_mask': mask}
    with pytest.raises(NoValidActionError, match=r'batch row\(s\) \[1\]') as info:
        model_wrap(model, name).forward(torch.zeros(3, 1), **kwargs)
    assert info.value.rows == [1]


def test_set_training_flags_every_module_as_train_does_and_respects_an_overridden_train():
    from torch import nn
    from ding_lite.model.wrappers import set_training

    class Frozen(nn.Dropout):  # a module whose mode is its own business
        def train(self, mode: bool = True):
            return super().train(False)

    plain = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.Sequential(nn.BatchNorm1d(2)))
    wrapped = model_wrap(plain, 'base')
    set_training(wrapped, False)
    assert not any(m.training for m in plain.modules())
    set_training(plain, True)
    assert all(m.training for m in plain.modules())
    custom = nn.Sequential(nn.Linear(2, 2), Frozen(0.5))
    set_training(custom, True)
    assert custom[0].training and not custom[1].training                  # its own train() ran
