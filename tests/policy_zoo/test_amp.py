"""``policy.learn.amp``: the SAC family's update with its forward passes in bf16 (or fp16 with a gradient scaler),
the losses in float32, on the CPU where autocast runs both."""
from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from ding_lite.config import ConfigError, compile_config
from ding_lite.data import default_collate
from policy_zoo import DiscreteSACPolicy, SACPolicy


def _cfg(policy_type='sac', action_shape=2, **learn):
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=3, action_shape=action_shape, actor_head_hidden_size=32, critic_head_hidden_size=32),
        learn=dict(dict(batch_size=64), **learn)))
    return compile_config(main, create_cfg=dict(policy=dict(type=policy_type)), save_cfg=False).policy


def _batch(n=64, discrete=False):
    torch.manual_seed(1)
    action = torch.randint(0, 2, (n,)) if discrete else torch.rand(n, 2) * 2 - 1
    return default_collate([{'obs': torch.randn(3), 'action': action[i], 'reward': float(torch.randn(())),
                             'next_obs': torch.randn(3), 'done': bool(i % 4 == 0)} for i in range(n)])


def _linear_dtypes(policy):
    """The dtypes the model's Linear layers compute in, recorded by forward hooks."""
    seen = set()
    for module in policy._model.modules():
        if isinstance(module, nn.Linear):
            module.register_forward_hook(lambda m, i, out: seen.add(out.dtype))
    return seen


@pytest.mark.parametrize('policy_cls, policy_type, action_shape', [(SACPolicy, 'sac', 2),
                                                                    (DiscreteSACPolicy, 'discrete_sac', 2)])
def test_bf16_runs_the_networks_in_bf16_and_stays_near_the_float32_update(policy_cls, policy_type, action_shape):
    torch.manual_seed(0)
    fp32 = policy_cls(_cfg(policy_type, action_shape))
    bf16 = policy_cls(_cfg(policy_type, action_shape, amp='bf16'))
    bf16._model.load_state_dict(fp32._model.state_dict())
    bf16._target_model.load_state_dict(fp32._target_model.state_dict())
    seen = _linear_dtypes(bf16)
    batch = _batch(discrete=policy_type == 'discrete_sac')
    torch.manual_seed(2)
    low = bf16.learn_mode.forward(copy.deepcopy(batch))
    torch.manual_seed(2)
    full = fp32.learn_mode.forward(copy.deepcopy(batch))
    assert seen == {torch.bfloat16}
    assert all(value.dtype == torch.float32 for key, value in low.items() if value.is_floating_point())
    for key in ('critic_loss', 'policy_loss', 'q_value', 'target_q_value'):  # bf16 keeps ~3 significant digits
        assert low[key].item() == pytest.approx(full[key].item(), rel=0.05, abs=0.02), key
    assert all(p.dtype == torch.float32 for p in bf16._model.parameters())  # the weights stay float32
    before = [p.clone() for p in bf16._model.critic.parameters()]
    bf16.learn_mode.forward(copy.deepcopy(batch))
    assert any(not torch.equal(a, b) for a, b in zip(before, bf16._model.critic.parameters()))


def test_fp16_steps_through_a_gradient_scaler_and_skips_a_step_with_inf_gradients():
    torch.manual_seed(0)
    policy = SACPolicy(_cfg(amp='fp16'))
    seen = _linear_dtypes(policy)
    stats = policy.learn_mode.forward(_batch())
    assert seen == {torch.float16} and torch.isfinite(stats['critic_loss'])
    scaler = policy.executor.scaler
    assert scaler is not None and scaler.get_scale() > 1
    before = [p.clone() for p in policy._model.critic.parameters()]
    batch = _batch()
    batch.reward[0] = float('inf')  # inf gradients: the scaler skips the critic's step and halves its scale
    scale = scaler.get_scale()
    policy.learn_mode.forward(batch)
    assert scaler.get_scale() < scale
    assert all(torch.equal(a, b) for a, b in zip(before, policy._model.critic.parameters()))


@pytest.mark.parametrize('learn, message', [(dict(amp='fp8'), "must be None"),
                                            (dict(amp='fp16', cuda_graph=True), "a CUDA graph cannot replay")])
def test_an_amp_setting_the_update_cannot_run_is_refused_at_compile_time(learn, message):
    with pytest.raises(ConfigError, match=message):
        _cfg(**learn)

