"""The learner's diagnostics: per-critic Q, the policy's mean and spread (or max probability), gradient norms;
exact against a hand computation, and in a run's tensorboard events."""
from __future__ import annotations

import copy

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import default_collate
from policy_zoo import DiscreteSACPolicy, SACPolicy, SQILSACPolicy

torch_norm = torch.nn.utils.get_total_norm


def _policy(cls, discrete: bool = False):
    torch.manual_seed(0)
    model = dict(obs_shape=3, action_shape=2, actor_head_hidden_size=16, critic_head_hidden_size=16)
    main = dict(exp_name='unused', policy=dict(model=model, learn=dict(batch_size=8)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type=cls.config['type'])), save_cfg=False).policy
    policy = cls(cfg)
    batch = default_collate([{'obs': torch.randn(3), 'reward': float(i), 'next_obs': torch.randn(3), 'done': False,
                              'action': torch.randint(2, ()) if discrete else torch.rand(2) * 2 - 1}
                             for i in range(8)])
    return policy, batch


@pytest.mark.parametrize('cls', [SACPolicy, SQILSACPolicy, DiscreteSACPolicy])
def test_learn_stats_are_per_critic_q_and_the_gradients_total_norms(cls):
    discrete = cls is DiscreteSACPolicy
    policy, batch = _policy(cls, discrete)
    before = copy.deepcopy(policy.model)
    stats = policy.learn_mode.forward(batch)
    critic_in = {'obs': batch['obs']} if discrete else {'obs': batch['obs'], 'action': batch['action']}
    with torch.no_grad():
        q = before.compute_critic(critic_in)['q_value']                    # [2, B(, A)] before the update
    if discrete:
        q = q.gather(-1, batch['action'].long().view(1, -1, 1).expand(2, -1, 1)).squeeze(-1)
    torch.testing.assert_close(stats['q_value_1'], q[0].mean())
    torch.testing.assert_close(stats['q_value_2'], q[1].mean())
    torch.testing.assert_close(stats['q_value'], q.mean())
    # the gradients of the step stay on the parameters until the next step clears them
    critic_grads = [p.grad for p in policy.model.critic.parameters()]
    torch.testing.assert_close(stats['grad_norm_critic'], torch_norm(critic_grads))
    torch.testing.assert_close(stats['grad_norm_actor'], torch_norm([p.grad for p in policy.model.actor.parameters()]))
    assert stats['grad_norm_critic'] > 0 and stats['grad_norm_actor'] > 0
    with torch.no_grad():
        logit = before.compute_actor(batch['obs'])['logit']
    if discrete:
        torch.testing.assert_close(stats['max_prob'], logit.softmax(-1).max(-1).values.mean())
    else:
        torch.testing.assert_close(stats['mu'], logit[0].mean())
        torch.testing.assert_close(stats['log_sigma'], logit[1].log().mean())
    assert set(policy.learn_mode.monitor_vars()) <= set(stats)
    assert all(not v.requires_grad for v in stats.values())
