"""Hyperparameter search (issue 41): trials as rows of one stacked update, each with its own hyperparameters."""
from __future__ import annotations

import copy

import pytest
import torch

from ding_lite.config import compile_config
from entry.pipeline.seed_axis import SeedAxis
from policy_zoo import create_policy
from tests.entry.test_seeds import _batch, _learn_tensors

TRIAL = dict(learning_rate_q=1e-3, learning_rate_policy=1e-4, learning_rate_alpha=3e-3, discount_factor=0.9,
             target_theta=0.05, alpha=0.5, target_entropy=-0.5)


def _policy(policy_type: str, model=None, **learn):
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=3, action_shape=2, actor_head_hidden_size=16, critic_head_hidden_size=16),
        learn={'batch_size': _batch_size(policy_type), **learn}))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type=policy_type)), save_cfg=False).policy
    return create_policy(cfg, model=model)


def _batch_size(policy_type: str) -> int:
    return 32 if policy_type == 'crossq' else 8  # CrossQ's batch norm at 8: see test_seeds


@pytest.mark.parametrize('policy_type', ['sac', 'discrete_sac', 'crossq'])
def test_a_stacked_rows_update_equals_its_own_hyperparameters_update(policy_type):
    """Row k of a stacked update with rows of different learning rates, gamma, tau, alpha and target entropy
    equals a single policy of row k's settings over 3 updates on the same batches: every tensor."""
    singles, rows = [], []
    for k, learn in enumerate((TRIAL, {})):
        torch.manual_seed(k)
        singles.append(_policy(policy_type, **learn))
        rows.append(_policy(policy_type, model=copy.deepcopy(singles[-1].model), **learn))
    axis = SeedAxis(rows, randomness='same')
    discrete = policy_type == 'discrete_sac'
    for step in range(3):
        batches = [_batch(discrete, _batch_size(policy_type)) for _ in range(2)]
        torch.manual_seed(step)
        axis.forward(batches)
        for k in range(2):
            torch.manual_seed(step)
            singles[k]._forward_learn(batches[k])
    for k in range(2):
        single, stacked = _learn_tensors(singles[k]), _learn_tensors(rows[k])
        for name in single:
            torch.testing.assert_close(stacked[name], single[name], rtol=1e-4, atol=1e-6, msg=name)
    assert float(rows[0]._alpha.value) != float(rows[1]._alpha.value)


def test_rows_apart_in_anything_else_do_not_stack():
    with pytest.raises(ValueError, match=r"differ in policy\.learn\.batch_size \(rows may set apart only"):
        SeedAxis([_policy('sac'), _policy('sac', batch_size=16)])
