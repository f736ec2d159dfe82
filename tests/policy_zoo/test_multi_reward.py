"""ALF's multi-dimensional rewards: ``policy.reward_weights``, a gamma per dimension, critics ``[E, B, D]``."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import ConfigError, compile_config
from ding_lite.data.collate import make_batch
from policy_zoo import DiscreteSACPolicy, SACPolicy
from tests.conftest import TINY_PENDULUM

Q = torch.tensor([[[10.0, 4.0]], [[12.0, 6.0]]])  # [E=2 replicas, B=1, D=2]


def _policy(cls=SACPolicy, obs=3, act=1, learn=None, **policy):
    """A policy whose temperature is 0 (the hand computations leave the entropy out)."""
    main = dict(exp_name='unused', policy=dict(model=dict(obs_shape=obs, action_shape=act), learn=learn or {},
                                               **policy))
    kind = 'sac' if cls is SACPolicy else 'discrete_sac'
    policy = cls(compile_config(main, create_cfg=dict(policy=dict(type=kind)), save_cfg=False).policy)
    policy._alpha = SimpleNamespace(value=torch.tensor(0.0), learned=False)
    return policy


def test_target_is_each_dimensions_own_bellman_backup_and_follows_set_reward_weights():
    policy = _policy(reward_weights=[1.0, 1.0], learn=dict(discount_factor=[0.9, 0.5]))
    policy._critic = lambda obs, action=None, target=False: Q                  # the target critics' values
    batch = make_batch(dict(obs=torch.zeros(1, 3), next_obs=torch.zeros(1, 3), action=torch.zeros(1, 1),
                            reward=torch.tensor([[1.0, -2.0]]), done=torch.zeros(1), weight=torch.ones(())))
    assert torch.allclose(policy._td_target(batch), torch.tensor([[10.0, 0.0]]))  # [1 + .9 * 10, -2 + .5 * 4]
    policy.set_reward_weights([1.0, -1.0])                                       # a cost: its replicas' max
    assert torch.allclose(policy._td_target(batch), torch.tensor([[10.0, 1.0]]))  # -2 + .5 * 6
    assert policy.reward_weights.tolist() == [1.0, -1.0]                         # what the returns weigh by
    assert torch.equal(policy._heads.learn_state()['reward_weights'], torch.tensor([1.0, -1.0]))
    with pytest.raises(ConfigError, match='expected 2 numbers'):
        policy.set_reward_weights([1.0])


def test_actor_maximises_the_weighted_values_and_the_entropy_bonus_counts_once():
    policy = _policy(reward_weights=[1.0, -1.0])
    policy._critic = lambda obs, action=None, target=False: Q
    loss, _, _ = policy._actor_loss(torch.zeros(1, 3))
    assert torch.allclose(loss, torch.tensor(-(10.0 - 6.0)))                    # -(w · Q), alpha 0
    for weights in ([1.0, -1.0], [0.2, 3.0], [1.0, 1.0, 1000.0]):
        policy._heads.weights = torch.tensor(weights)
        assert torch.allclose(policy._heads.combine(policy._heads.entropy_share()), torch.tensor(1.0))


def test_discrete_sac_reduces_each_dimension_and_weighs_them():
    policy = _policy(DiscreteSACPolicy, obs=4, act=2, reward_weights=[1.0, -1.0])
    q = torch.tensor([[[[1.0, 5.0], [2.0, 0.0]]], [[[3.0, 7.0], [0.0, 4.0]]]])  # [E=2, B=1, A=2, D=2]
    policy._critic = lambda obs, action=None, target=False: q
    pi = policy._log_pi(torch.zeros(1, 4)).exp()[0]                              # [A]
    reduced = torch.tensor([[1.0, 7.0], [0.0, 4.0]])                            # min on d0, max on d1, per action
    assert torch.allclose(policy._soft_target_v(torch.zeros(1, 4))[0], (pi[:, None] * reduced).sum(0))
    loss, _, _ = policy._actor_loss(torch.zeros(1, 4))
    assert torch.allclose(loss, -(pi * (reduced[:, 0] - reduced[:, 1])).sum())


def _split(tmp_path, **policy):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / 'split')
    main.policy.update(policy)
    return main, EasyDict(env=dict(type='pendulum_split'), env_manager=dict(type='base'), policy=dict(type='sac'))


def test_reward_weights_are_checked_at_compile_time(tmp_path):
    for policy, words in ((dict(reward_weights=[0.0, 0.0]), 'not all zero'),
                          (dict(reward_weights=[1.0, 1.0], learn=dict(discount_factor=[0.9])), 'expected 2 numbers'),
                          (dict(learn=dict(discount_factor=[0.9, 0.5])), 'set policy.reward_weights'),
                          (dict(reward_weights=[1.0, 1.0], learn=dict(discount_factor=[0.9, 1.5])), r'\(0, 1\]')):
        main, create = _split(tmp_path, **policy)
        with pytest.raises(ConfigError, match=words):
            compile_config(main, create, save_cfg=False)
