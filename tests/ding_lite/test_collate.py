from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.data import Batch, default_collate, default_decollate


def test_collate_nested_dicts_arrays_scalars():
    samples = [{'obs': np.full(3, i, dtype=np.float64), 'reward': float(i), 'done': i == 1,
                'info': {'step': i, 'pair': (np.int64(i), torch.tensor([i, i]))}} for i in range(2)]
    batch = default_collate(samples)
    assert isinstance(batch, dict)  # a tuple leaf cannot live in a tree: plain dict
    assert batch['obs'].dtype == torch.float32 and batch['obs'].shape == (2, 3)   # float64 -> default float
    torch.testing.assert_close(batch['reward'], torch.tensor([0.0, 1.0]))
    assert batch['done'].tolist() == [False, True]
    assert batch['info']['step'].tolist() == [0, 1]
    assert batch['info']['pair'][1].tolist() == [[0, 0], [1, 1]]
    tree = default_collate([{'obs': np.zeros(2), 'n': {'v': 1}}] * 3)
    assert isinstance(tree, Batch) and tree.n.v.tolist() == [1, 1, 1]


def test_collate_keeps_strings_as_lists():
    out = default_collate([{'name': 'a', 'x': 1}, {'name': 'b', 'x': 2}])
    assert out['name'] == ['a', 'b'] and out['x'].tolist() == [1, 2]


def test_ragged_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r"cannot collate data.obs: ragged input, sample 1 has shape \(4,\)"):
        default_collate([{'obs': np.zeros(3)}, {'obs': np.zeros(4)}])
    with pytest.raises(ValueError, match="sample 1 has keys"):
        default_collate([{'obs': 1}, {'ob': 1}])
    with pytest.raises(TypeError, match="cannot collate data.x"):
        default_collate([{'x': object()}, {'x': object()}])


def test_decollate_inverts_collate():
    samples = [{'obs': torch.randn(3), 'act': torch.tensor(i), 'n': {'v': torch.randn(2)}} for i in range(4)]
    back = default_decollate(default_collate(samples))
    assert len(back) == 4
    for original, restored in zip(samples, back):
        torch.testing.assert_close(restored['obs'], original['obs'])
        torch.testing.assert_close(restored['n']['v'], original['n']['v'])
        assert int(restored['act']) == int(original['act'])


def test_true_rows_lists_the_rows_that_are_true():
    from ding_lite.data.collate import true_rows
    assert true_rows(np.zeros(4, bool)) == []
    assert true_rows(np.array([False, True, False, True])) == [1, 3]
    assert true_rows(np.array([0.0, 2.0, 0.0])) == [1]  # any non-zero value, as a done column of numbers gives it
