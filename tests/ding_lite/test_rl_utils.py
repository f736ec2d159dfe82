from __future__ import annotations

import pytest
import torch

from ding_lite.data import default_collate
from ding_lite.rl_utils import (get_train_sample, preprocess_learn_batch, q_v_1step_td_data, q_v_1step_td_error,
                                v_1step_td_data, v_1step_td_error)


def test_v_1step_td_error_hand_computed():
    v = torch.tensor([1.0, 2.0, 0.5])
    next_v = torch.tensor([2.0, 4.0, 10.0])
    reward = torch.tensor([0.5, -1.0, 1.0])
    done = torch.tensor([False, False, True])
    weight = torch.tensor([1.0, 2.0, 0.5])
    # targets: 0.5+0.9*2=2.3, -1+0.9*4=2.6, 1 (done: no bootstrap)
    loss, per = v_1step_td_error(v_1step_td_data(v, next_v, reward, done, weight), gamma=0.9)
    expected = torch.tensor([1.3 ** 2, 0.6 ** 2, 0.5 ** 2])
    torch.testing.assert_close(per, expected)
    torch.testing.assert_close(loss, (expected * weight).mean())
    loss_unweighted, _ = v_1step_td_error(v_1step_td_data(v, next_v, reward, done, None), gamma=0.9)
    torch.testing.assert_close(loss_unweighted, expected.mean())


def test_v_target_is_detached():
    next_v = torch.tensor([1.0], requires_grad=True)
    v = torch.tensor([0.0], requires_grad=True)
    loss, _ = v_1step_td_error(v_1step_td_data(v, next_v, torch.zeros(1), None, None), gamma=0.5)
    loss.backward()
    assert next_v.grad is None and v.grad is not None


def test_q_v_1step_td_error_hand_computed():
    q = torch.tensor([[1.0, 3.0], [0.0, -2.0]])
    act = torch.tensor([1, 0])
    v = torch.tensor([2.0, 5.0])
    reward = torch.tensor([1.0, 0.0])
    done = torch.tensor([0.0, 1.0])
    # q_sa = [3, 0]; targets: 1 + 0.5 * 2 = 2, 0 (done)
    loss, per = q_v_1step_td_error(q_v_1step_td_data(q, v, act, reward, done, torch.tensor([1.0, 3.0])), 0.5)
    torch.testing.assert_close(per, torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(loss, torch.tensor(0.5))


def _traj(n):
    return [{'obs': torch.tensor([float(i)]), 'reward': torch.tensor(float(i))} for i in range(n)]


def test_get_train_sample_unroll():
    assert [t['reward'].item() for t in get_train_sample(_traj(3), 1)] == [0, 1, 2]
    samples = get_train_sample(_traj(7), 3)                      # 'last': final chunk overlaps
    assert [s['reward'].tolist() for s in samples] == [[0, 1, 2], [3, 4, 5], [4, 5, 6]]
    assert samples[0]['obs'].shape == (3, 1)
    assert len(get_train_sample(_traj(7), 3, 'drop')) == 2
    padded = get_train_sample(_traj(7), 3, 'null_padding')
    assert padded[-1]['reward'].tolist() == [6, 0, 0] and padded[-1]['null'].tolist() == [False, True, True]
    assert padded[0]['null'].tolist() == [False] * 3
    with pytest.raises(ValueError, match='unroll_len must be >= 1'):
        get_train_sample(_traj(2), 0)


def test_preprocess_learn_batch():
    data = [{'obs': torch.zeros(2), 'reward': 1, 'done': True, 'weight': 0.5} for _ in range(4)]
    batch = preprocess_learn_batch(data)
    assert batch.done.dtype == torch.float32 and batch.done.tolist() == [1.0] * 4
    assert batch.reward.dtype == torch.float32 and batch.weight.item() == 1.0  # IS weights off: weight 1
    batch = preprocess_learn_batch(default_collate(data), ignore_done=True, use_priority_IS_weight=True)
    assert batch.done.tolist() == [0.0] * 4 and batch.weight.tolist() == [0.5] * 4
    with pytest.raises(ValueError, match="no 'weight' field"):
        preprocess_learn_batch([{'reward': 1, 'done': False}], use_priority_IS_weight=True)
