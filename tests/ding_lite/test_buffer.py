from __future__ import annotations

import collections

import pytest
import torch

from ding_lite.data import PrioritizedReplayBuffer, ReplayBuffer, default_collate
from ding_lite.registry import BUFFER_REGISTRY


def _transitions(start, n, obs_dim=3):
    return [{'obs': torch.full((obs_dim,), float(i)), 'action': torch.tensor([float(i)]), 'reward': float(i),
             'next_obs': torch.full((obs_dim,), float(i + 1)), 'done': i % 2 == 0} for i in range(start, start + n)]


def test_registered_names():
    assert BUFFER_REGISTRY.get('naive') is ReplayBuffer
    assert BUFFER_REGISTRY.get('priority') is PrioritizedReplayBuffer
    assert BUFFER_REGISTRY.get('advanced') is PrioritizedReplayBuffer


def test_ring_overwrites_oldest_and_fields_stay_aligned():
    buffer = ReplayBuffer({'replay_buffer_size': 5})
    buffer.push(_transitions(0, 3))
    buffer.push(_transitions(3, 4))  # 7 pushed into 5 slots: 0 and 1 are gone
    assert buffer.count() == len(buffer) == 5
    batch = buffer.sample(200)
    ids = batch.reward
    assert set(ids.tolist()) == {2.0, 3.0, 4.0, 5.0, 6.0}
    torch.testing.assert_close(batch.obs[:, 0], ids)           # every field comes from the same slot
    torch.testing.assert_close(batch.next_obs[:, 0], ids + 1)
    torch.testing.assert_close(batch.action[:, 0], ids)
    assert (batch.done == (ids % 2 == 0)).all() and batch.done.dtype == torch.bool


def test_push_batch_larger_than_buffer_keeps_newest():
    buffer = ReplayBuffer({'replay_buffer_size': 4})
    from ding_lite.data import default_collate
    buffer.push(default_collate(_transitions(0, 10)))
    assert sorted(set(buffer.sample(100).reward.tolist())) == [6.0, 7.0, 8.0, 9.0]


def test_sample_is_uniform():
    buffer = ReplayBuffer({'replay_buffer_size': 10})
    buffer.push(_transitions(0, 10))
    counts = collections.Counter(buffer.sample(20000).reward.tolist())
    assert len(counts) == 10 and all(1700 < c < 2300 for c in counts.values())


def test_shape_change_and_field_change_are_clear_errors():
    buffer = ReplayBuffer({'replay_buffer_size': 5})
    buffer.push(_transitions(0, 2))
    with pytest.raises(ValueError, match=r"field '(next_)?obs' has per-transition shape \(4,\), but the buffer was created with \(3,\)"):
        buffer.push(_transitions(0, 2, obs_dim=4))
    with pytest.raises(ValueError, match='differ from the buffer'):
        buffer.push([{'obs': torch.zeros(3)}])
    with pytest.raises(ValueError, match='empty replay buffer'):
        ReplayBuffer({'replay_buffer_size': 5}).sample(1)


def test_clear_then_reuse():
    buffer = ReplayBuffer({'replay_buffer_size': 5})
    buffer.push(_transitions(0, 5))
    buffer.clear()
    assert buffer.count() == 0
    buffer.push(_transitions(10, 1))
    assert buffer.sample(10).reward.tolist() == [10.0] * 10


def test_save_load_round_trip_keeps_order(tmp_path):
    buffer = ReplayBuffer({'replay_buffer_size': 5})
    buffer.push(_transitions(0, 7))
    path = str(tmp_path / 'buffer.pt')
    buffer.save(path)
    restored = ReplayBuffer({'replay_buffer_size': 5})
    restored.load(path)
    assert restored.count() == 5
    restored.push(_transitions(100, 1))  # overwrites the oldest (2), so the ring position was restored
    assert sorted(set(restored.sample(300).reward.tolist())) == [3.0, 4.0, 5.0, 6.0, 100.0]
    smaller = ReplayBuffer({'replay_buffer_size': 2})
    smaller.load(path)
    assert sorted(set(smaller.sample(100).reward.tolist())) == [5.0, 6.0]


def test_load_bad_files(tmp_path):
    buffer = ReplayBuffer({'replay_buffer_size': 5})
    with pytest.raises(FileNotFoundError, match='replay buffer file not found'):
        buffer.load(str(tmp_path / 'none.pt'))
    garbage = tmp_path / 'garbage.pt'
    garbage.write_bytes(b'not a torch file')
    with pytest.raises(ValueError, match='not a readable torch file'):
        buffer.load(str(garbage))
    foreign = tmp_path / 'foreign.pt'
    torch.save({'weights': 1}, foreign)
    with pytest.raises(ValueError, match='not a ding_lite replay buffer file'):
        buffer.load(str(foreign))


def test_failed_save_keeps_previous_file(tmp_path, monkeypatch):
    buffer = ReplayBuffer({'replay_buffer_size': 5})
    buffer.push(_transitions(0, 2))
    path = tmp_path / 'buffer.pt'
    buffer.save(str(path))
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise RuntimeError('disk full')
    monkeypatch.setattr(torch, 'save', crash)
    with pytest.raises(RuntimeError):
        buffer.save(str(path))
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ['buffer.pt']


def test_prioritized_sampling_follows_priorities_and_weights():
    buffer = PrioritizedReplayBuffer({'replay_buffer_size': 4, 'alpha': 1.0, 'beta': 1.0, 'anneal_step': 0})
    buffer.push(_transitions(0, 4))
    first = buffer.sample(4)
    assert first.priority_IS.tolist() == [1.0] * 4  # equal (max) priorities for new data
    buffer.update({'replay_buffer_idx': torch.arange(4), 'priority': torch.tensor([1.0, 1.0, 1.0, 5.0])})
    batch = buffer.sample(8000)
    frac = (batch.replay_buffer_idx == 3).float().mean().item()
    assert abs(frac - 5 / 8) < 0.03
    # w_i = (N P_i)^-beta / max_j w_j: the rare items get weight 1, the frequent one 1/5
    expected = torch.where(batch.replay_buffer_idx == 3, 0.2, 1.0)
    torch.testing.assert_close(batch.priority_IS, expected)
    torch.testing.assert_close(batch.reward, batch.replay_buffer_idx.float())


def test_prioritized_new_data_gets_max_priority_and_beta_anneals():
    buffer = PrioritizedReplayBuffer({'replay_buffer_size': 8, 'alpha': 1.0, 'beta': 0.5, 'anneal_step': 2})
    buffer.push(_transitions(0, 2))
    buffer.update({'replay_buffer_idx': torch.tensor([0, 1]), 'priority': torch.tensor([3.0, 1.0])})
    buffer.push(_transitions(2, 1))  # gets priority 3 (the max seen)
    frac = (buffer.sample(7000).replay_buffer_idx == 2).float().mean().item()
    assert abs(frac - 3 / 7) < 0.03
    assert buffer.beta == 0.75  # 0.5 + (1 - 0.5) / anneal_step per sample call
    buffer.sample(1), buffer.sample(1)
    assert buffer.beta == 1.0
    with pytest.raises(ValueError, match='2 indices but 1 priorities'):
        buffer.update({'replay_buffer_idx': torch.tensor([0, 1]), 'priority': torch.tensor([1.0])})


def test_prioritized_save_load_keeps_priorities_and_beta(tmp_path):
    buffer = PrioritizedReplayBuffer({'replay_buffer_size': 4, 'alpha': 1.0, 'beta': 0.5, 'anneal_step': 10})
    buffer.push(_transitions(0, 4))
    buffer.push(_transitions(4, 2))                     # slots hold rewards 4, 5, 2, 3 (ring)
    buffer.update({'replay_buffer_idx': torch.arange(4), 'priority': torch.tensor([4.0, 5.0, 2.0, 3.0])})
    buffer.sample(1)
    path = str(tmp_path / 'prio.pt')
    buffer.save(path)
    restored = PrioritizedReplayBuffer({'replay_buffer_size': 4, 'alpha': 1.0, 'beta': 0.5, 'anneal_step': 10})
    restored.load(path)
    assert restored.beta == buffer.beta
    batch = restored.sample(14000)
    for reward in (2.0, 3.0, 4.0, 5.0):                  # priority equal to the reward: P = r / 14
        frac = (batch.reward == reward).float().mean().item()
        assert abs(frac - reward / 14) < 0.02


def test_prioritized_save_with_alpha_zero_keeps_raw_priorities(tmp_path):
    buffer = PrioritizedReplayBuffer({'replay_buffer_size': 4, 'alpha': 0.0})
    buffer.push(_transitions(0, 4))
    buffer.update({'replay_buffer_idx': torch.arange(4), 'priority': torch.tensor([4.0, 5.0, 2.0, 3.0])})
    path = str(tmp_path / 'prio0.pt')
    buffer.save(path)
    assert torch.load(path, weights_only=True)['extra']['priority'].tolist() == [4.0, 5.0, 2.0, 3.0]
    restored = PrioritizedReplayBuffer({'replay_buffer_size': 4, 'alpha': 1.0})  # the same data, now prioritised
    restored.load(path)
    frac = (restored.sample(7000).replay_buffer_idx == 1).float().mean().item()
    assert abs(frac - 5 / 14) < 0.03


def test_prioritized_duplicate_indices_agree_in_both_trees():
    buffer = PrioritizedReplayBuffer({'replay_buffer_size': 8, 'alpha': 1.0})
    buffer.push(_transitions(0, 8))
    buffer.update({'replay_buffer_idx': torch.tensor([3, 3, 5, 3]), 'priority': torch.tensor([2.0, 7.0, 4.0, 1.0])})
    tree, min_tree = buffer._sum_tree, buffer._min_tree
    assert tree[torch.tensor([3, 5])].tolist() == [7.0, 4.0]           # a duplicated leaf takes its largest value
    assert tree.reduce().item() == pytest.approx(6 * 1.0 + 7.0 + 4.0)   # the root sums what the leaves hold
    assert min_tree[torch.tensor([3])].tolist() == [7.0] and min_tree.reduce().item() == 1.0
    leaves = tree.tree[tree.capacity:]
    for level_start in (tree.capacity // 2, 1):                       # every parent is the sum of its children
        parents = torch.arange(level_start, 2 * level_start)
        torch.testing.assert_close(tree.tree[parents], tree.tree[2 * parents] + tree.tree[2 * parents + 1])
    assert leaves.sum().item() == tree.reduce().item()


def test_transitions_keep_their_own_weight_beside_priority_is():
    buffer = PrioritizedReplayBuffer({'replay_buffer_size': 4})
    data = [dict(t, weight=0.25 * (i + 1)) for i, t in enumerate(_transitions(0, 4))]
    buffer.push(data)
    batch = buffer.sample(64)
    torch.testing.assert_close(batch.weight, 0.25 * (batch.replay_buffer_idx.float() + 1))
    assert batch.priority_IS.shape == (64,)


def test_di_engine_extra_arguments_and_create_buffer():
    from ding_lite.worker import create_buffer
    buffer = create_buffer({'type': 'priority', 'replay_buffer_size': 10}, tb_logger=None, exp_name='x')
    assert isinstance(buffer, PrioritizedReplayBuffer) and buffer.size == 10
    buffer.push(_transitions(0, 3), cur_collector_envstep=30)
    assert buffer.sample(2, cur_learner_iter=5).obs.shape == (2, 3)
    assert isinstance(create_buffer({'replay_buffer_size': 7}), ReplayBuffer)
    partial = ReplayBuffer({'replay_buffer_size': 3})   # a partial sub-config keeps the other defaults
    assert partial.device == torch.device('cpu')


def test_staged_fields_travel_as_one_copy_per_dtype_and_arrive_unchanged(monkeypatch):
    from ding_lite.utils.device import staged
    flat = {('obs',): torch.randn(3, 2, 2), ('action',): torch.randn(3, 1), ('reward',): torch.randn(3),
            ('done',): torch.tensor([True, False, True])}
    dtypes = {('obs',): torch.float32, ('action',): torch.float32, ('reward',): torch.float32, ('done',): torch.bool}
    copies = []
    meta = torch.device('meta')  # "another device": what would be copied there, and how often
    real_to = torch.Tensor.to
    monkeypatch.setattr(torch.Tensor, 'to', lambda self, *a, **k: copies.append(a) or real_to(self, *a, **k))
    out = staged(flat, dtypes, meta)
    assert sum(1 for a in copies if a and a[0] == meta) == 2                    # float32 fields together, bool
    assert {p: tuple(v.shape) for p, v in out.items()} == {p: tuple(v.shape) for p, v in flat.items()}
    assert all(v.device == meta for v in out.values())
    monkeypatch.undo()
    for path, value in staged(flat, dtypes, torch.device('cpu')).items():       # on the host: as they were
        assert torch.equal(value, flat[path])


def test_pushes_wait_for_a_chunk_and_samples_draw_from_what_is_written(tmp_path):
    """``push_chunk``: host rows are written k at a time, in order; a sample draws from the written rows (all of them
    while none are written yet); the waiting rows count, survive a save and load, and push on from there."""
    buffer = ReplayBuffer({'replay_buffer_size': 6, 'push_chunk': 3})
    for k, transition in enumerate(_transitions(0, 2)):
        buffer.push([transition])
        assert buffer.count() == len(buffer) == k + 1 and buffer._count == 0
    assert set(buffer.sample(50).reward.tolist()) == {0.0, 1.0}       # nothing written yet: the sample writes them
    buffer.push(_transitions(2, 2))
    assert buffer._count == 2 and buffer.count() == 4                # 2 written by the sample, 2 waiting
    assert set(buffer.sample(200).reward.tolist()) == {0.0, 1.0}
    buffer.save(str(tmp_path / 'b.pt'))
    loaded = ReplayBuffer({'replay_buffer_size': 6, 'push_chunk': 3})
    loaded.load(str(tmp_path / 'b.pt'))
    for b in (buffer, loaded):
        b.push(_transitions(4, 1))                                   # the third waiting row: all written
        b.push(default_collate(_transitions(5, 4)))                  # a batch of a chunk or more: written at once
        assert b._count == b.count() == 6 and b._waiting_n == 0
        assert b.fields()[('reward',)].tolist() == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    unchunked = ReplayBuffer({'replay_buffer_size': 6})
    unchunked.load(str(tmp_path / 'b.pt'))                           # the waiting rows written where none wait
    assert unchunked.count() == unchunked._count == 4 and unchunked.fields()[('reward',)].tolist() == [0, 1, 2, 3]


def test_samples_drawn_ahead_are_one_draw_handed_out_in_turn(tmp_path):
    """``sample_ahead``: k batches are one draw of k times the batch, in order; a new batch size draws again; the
    batches not handed out yet survive a save and load."""
    plain, ahead = ReplayBuffer({'replay_buffer_size': 50}), ReplayBuffer({'replay_buffer_size': 50,
                                                                            'sample_ahead': 3})
    for b in (plain, ahead):
        b.push(_transitions(0, 50))
    torch.manual_seed(0)
    whole = plain.sample(12).reward
    torch.manual_seed(0)
    assert torch.equal(torch.cat([ahead.sample(4).reward for _ in range(3)]), whole)
    ahead.sample(4)                                                  # a new draw of 3
    ahead.save(str(tmp_path / 'b.pt'))
    loaded = ReplayBuffer({'replay_buffer_size': 50, 'sample_ahead': 3})
    loaded.load(str(tmp_path / 'b.pt'))
    for _ in range(2):
        got, expected = loaded.sample(4), ahead.sample(4)
        assert torch.equal(got.obs, expected.obs) and torch.equal(got.reward, expected.reward)
    assert ahead.sample(5).reward.shape == (5,) and len(ahead._ahead) == 2  # another size: drawn again


def test_chunks_and_draws_ahead_default_to_one_on_the_host_and_are_checked():
    from ding_lite.config import ConfigError
    buffer = ReplayBuffer({'replay_buffer_size': 4})
    assert (buffer._chunk, buffer._ahead_n) == (1, 1)
    small = ReplayBuffer({'replay_buffer_size': 3, 'push_chunk': 8})  # never more rows waiting than slots
    small.push(_transitions(0, 2))
    small.push(_transitions(2, 2))
    assert small._chunk == 3 and small.fields()[('reward',)].tolist() == [1.0, 2.0, 3.0]
    prioritized = PrioritizedReplayBuffer({'replay_buffer_size': 4, 'push_chunk': 4, 'sample_ahead': 4})
    assert (prioritized._chunk, prioritized._ahead_n) == (1, 1)      # per-slot priorities: written and drawn as before
    for bad in (0, 2.5, 'x', True):
        with pytest.raises(ConfigError, match=r'replay_buffer\.push_chunk must be a positive int'):
            ReplayBuffer({'replay_buffer_size': 4, 'push_chunk': bad})
