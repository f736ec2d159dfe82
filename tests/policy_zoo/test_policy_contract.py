"""Contracts every SAC-family policy keeps (parametrised, Stable-Baselines3 style)."""
from __future__ import annotations

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.registry import POLICY_REGISTRY

POLICIES = {'sac': (3, 2, lambda: torch.rand(2) * 2 - 1), 'sqil_sac': (3, 2, lambda: torch.rand(2) * 2 - 1),
            'discrete_sac': (3, 4, lambda: torch.randint(4, ())), 'tqc': (3, 2, lambda: torch.rand(2) * 2 - 1),
            **{name: (3, 2, lambda: torch.rand(2) * 2 - 1) for name in ('sac_v1', 'redq', 'droq', 'crossq')}}


def _policy(name):
    obs, act, _ = POLICIES[name]
    main = dict(exp_name='unused', policy=dict(model=dict(obs_shape=obs, action_shape=act,
                                                          actor_head_hidden_size=16, critic_head_hidden_size=16)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type=name)), save_cfg=False)
    return POLICY_REGISTRY.get(name)(cfg.policy)


def _batch(name, n=16):
    obs, _, action = POLICIES[name]
    return [{'obs': torch.randn(obs), 'action': action(), 'reward': float(torch.randn(())),
             'next_obs': torch.randn(obs), 'done': bool(i % 3 == 0)} for i in range(n)]


@pytest.mark.parametrize('name', list(POLICIES))
def test_learn_returns_detached_tensors_and_monitor_vars(name):
    policy = _policy(name)
    stats = policy.learn_mode.forward(_batch(name))
    assert set(policy.learn_mode.monitor_vars()) <= set(stats)
    assert all(isinstance(v, torch.Tensor) and not v.requires_grad for v in stats.values())
    assert all(v.dim() == 0 for k, v in stats.items() if k != 'priority') and stats['priority'].shape == (16,)


@pytest.mark.parametrize('name', list(POLICIES))
def test_state_dict_round_trip_changes_the_next_action(name):
    torch.manual_seed(0)
    trained, fresh = _policy(name), _policy(name)
    for _ in range(20):
        trained.learn_mode.forward(_batch(name))
    obs = {i: torch.randn(POLICIES[name][0]) for i in range(32)}
    actions = lambda p: torch.stack([o['action'] for o in p.eval_mode.forward(obs).values()])  # noqa: E731
    assert not torch.equal(actions(fresh), actions(trained))
    fresh.learn_mode.load_state_dict(trained.learn_mode.state_dict())
    torch.testing.assert_close(actions(fresh), actions(trained))


@pytest.mark.parametrize('name', list(POLICIES))
def test_one_state_loaded_into_two_policies_is_not_shared(name):
    """Two policies that loaded one state dict step as two copies: the optimizer moments (and Adam's step count)
    each loads are its own, else the first to step moves the second's (a CUDA graph after a load saw this)."""
    torch.manual_seed(0)
    trained = _policy(name)
    for _ in range(3):
        trained.learn_mode.forward(_batch(name))
    state = trained.learn_mode.state_dict()
    first, second = _policy(name), _policy(name)
    first.learn_mode.load_state_dict(state)
    second.learn_mode.load_state_dict(state)
    batch = _batch(name)
    for policy in (first, second):
        torch.manual_seed(1)
        policy.learn_mode.forward(batch)
    for a, b in zip(first.model.parameters(), second.model.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize('name', list(POLICIES))
def test_collect_and_eval_return_one_action_per_env(name):
    policy = _policy(name)
    obs = {7: torch.randn(3), 2: torch.randn(3)}
    for out in (policy.collect_mode.forward(obs), policy.eval_mode.forward(obs)):
        assert list(out) == [7, 2] and all('action' in o for o in out.values())
