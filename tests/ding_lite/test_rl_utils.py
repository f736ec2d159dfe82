from __future__ import annotations

import math

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


def test_preprocess_learn_batch_weights():
    data = [{'obs': torch.zeros(2), 'reward': 1, 'done': True, 'weight': 0.5, 'priority_IS': 0.25 * (i + 1)}
            for i in range(4)]
    batch = preprocess_learn_batch(data)
    assert batch.done.dtype == torch.float32 and batch.done.tolist() == [1.0] * 4
    assert batch.reward.dtype == torch.float32 and batch.weight.tolist() == [0.5] * 4  # the transitions' own
    batch = preprocess_learn_batch(default_collate(data), ignore_done=True, use_priority_IS_weight=True)
    assert batch.done.tolist() == [0.0] * 4 and batch.weight.tolist() == [0.25, 0.5, 0.75, 1.0]
    legacy = [{'reward': 1.0, 'done': False, 'IS': 0.5}]                       # DI-engine's older key
    assert preprocess_learn_batch(legacy, use_priority_IS_weight=True).weight.tolist() == [0.5]
    unweighted = preprocess_learn_batch([{'reward': 1.0, 'done': False}] * 2)
    assert unweighted.weight.dim() == 0 and unweighted.weight.item() == 1.0     # 1 only where absent
    with pytest.raises(ValueError, match="no 'priority_IS' field"):
        preprocess_learn_batch([{'reward': 1, 'done': False}], use_priority_IS_weight=True)


def test_preprocess_learn_batch_shapes():
    column = [{'obs': torch.zeros(3), 'action': torch.tensor([i % 2]), 'reward': torch.tensor([float(i)]),
               'done': torch.tensor([i == 3])} for i in range(4)]         # DI-engine: shape-(1,) fields
    batch = preprocess_learn_batch(column)
    assert batch.reward.shape == (4,) and batch.done.shape == (4,) and batch.done.tolist() == [0, 0, 0, 1]
    assert batch.action.shape == (4,) and batch.action.dtype == torch.int64     # discrete [B, 1] -> [B]
    continuous = preprocess_learn_batch([dict(c, action=torch.tensor([0.5])) for c in column])
    assert continuous.action.shape == (4, 1)                                     # a 1-D Box action stays [B, 1]
    bad = [dict(c, reward=torch.zeros(2)) for c in column]
    with pytest.raises(ValueError, match=r"field 'reward' has shape \(4, 2\); expected \[B\] or \[B, 1\]"):
        preprocess_learn_batch(bad)
    with pytest.raises(ValueError, match="field 'done' has shape"):
        preprocess_learn_batch({'reward': torch.zeros(4), 'done': torch.zeros(4, 3)})


def test_preprocess_collates_namedtuple_fields():
    from collections import namedtuple
    Obs = namedtuple('Obs', ['pos', 'vel'])
    data = [{'obs': Obs(torch.ones(2) * i, torch.zeros(1)), 'reward': 0.0, 'done': False} for i in range(3)]
    collated = default_collate(data)
    assert isinstance(collated['obs'], Obs) and collated['obs'].pos.shape == (3, 2)
    batch = preprocess_learn_batch(data)                       # a namedtuple field becomes a sub-batch of its fields
    assert batch.obs.pos.shape == (3, 2) and batch.obs.pos[2].tolist() == [2, 2] and batch.obs.vel.shape == (3, 1)
    Transition = namedtuple('Transition', ['obs', 'reward', 'done'])
    rows = preprocess_learn_batch([Transition(torch.zeros(2), 1.0, False)] * 3)   # namedtuple transitions too
    assert rows.reward.tolist() == [1.0] * 3


def test_di_engine_default_preprocess_learn():
    from policy_zoo.common_utils import default_preprocess_learn
    data = [{'obs': torch.zeros(3), 'action': torch.tensor([1]), 'reward': torch.tensor([2.0]),
             'done': torch.tensor([False]), 'priority_IS': torch.tensor([0.5])} for _ in range(4)]
    out = default_preprocess_learn(data)
    assert isinstance(out, dict) and out['weight'] is None and out['reward'].shape == (4,)  # no own weight: None
    assert out['done'].dtype == torch.float32 and out['action'].shape == (4,)
    out = default_preprocess_learn(data, use_priority_IS_weight=True, use_priority=True, ignore_done=True)
    assert out['weight'].tolist() == [0.5] * 4 and out['done'].tolist() == [0.0] * 4
    nstep = [dict(d, reward=torch.tensor([1.0, 2.0, 3.0])) for d in data]
    assert default_preprocess_learn(nstep, use_nstep=True)['reward'].shape == (3, 4)    # [nstep, B]
    with pytest.raises(ValueError, match='needs use_priority=True'):
        default_preprocess_learn(data, use_priority_IS_weight=True)


def test_di_engine_epsilon_greedy_fn():
    from ding_lite.rl_utils import get_epsilon_greedy_fn
    exp = get_epsilon_greedy_fn(0.95, 0.05, 100)
    assert exp(0) == pytest.approx(0.95) and exp(100) == pytest.approx(0.05 + 0.9 * math.exp(-1))
    linear = get_epsilon_greedy_fn(1.0, 0.1, 10, type_='linear')
    assert linear(5) == pytest.approx(0.55) and linear(10) == linear(50) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="'exp' or 'linear'"):
        get_epsilon_greedy_fn(1.0, 0.1, 10, type_='cosine')
