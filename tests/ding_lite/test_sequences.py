"""Sequences in the replay buffer (issue 38): slices of one env's episode, never crossing its end, padded and
masked; links rebuilt on load and kept right as the ring overwrites."""
from __future__ import annotations

import torch

from ding_lite.data import PrioritizedReplayBuffer, ReplayBuffer


def _episodes(lengths: list[int], start_value: float = 10.0) -> list[dict]:
    """Transitions of one episode per env (env k of length ``lengths[k]``), written as envs step together; a
    transition's obs is ``10 * (k + 1) + t`` for step t of env k."""
    rows = []
    for t in range(max(lengths)):
        for env, length in enumerate(lengths):
            if t < length:
                value = start_value * (env + 1) + t
                rows.append(dict(obs=torch.tensor([value]), reward=torch.tensor(value),
                                 done=torch.tensor(t == length - 1),
                                 state=torch.tensor([value, -value]), env_id=torch.tensor(env),
                                 episode_start=torch.tensor(t == 0)))
    return rows


def test_sequences_of_hand_made_episodes_equal_the_table():
    """Episodes of lengths [5, 3], unroll_len 4: every slot's sequence, padding and mask as written by hand."""
    buffer = ReplayBuffer(dict(replay_buffer_size=20, sequence_length=4))
    buffer.push(_episodes([5, 3]))
    out = buffer._gather(torch.arange(8))  # slots in write order: 10 20 11 21 12 22 13 14
    expected = [[10, 11, 12, 13], [20, 21, 22, 0], [11, 12, 13, 14], [21, 22, 0, 0],
                [12, 13, 14, 0], [22, 0, 0, 0], [13, 14, 0, 0], [14, 0, 0, 0]]
    mask = [[v != 0 for v in row] for row in expected]
    assert out.obs.squeeze(-1).tolist() == expected
    assert out.reward.tolist() == expected
    assert out.mask.tolist() == mask
    assert out.done.tolist() == [[False, False, False, False], [False, False, True, False],
                                 [False, False, False, True], [False, True, False, False],
                                 [False, False, True, False], [True, False, False, False],
                                 [False, True, False, False], [True, False, False, False]]
    # the state and the other first-step fields come at the sequence's first step only
    assert out.state.tolist() == [[row[0], -row[0]] for row in expected]
    # no sequence crosses an episode's end: every valid step is of the first step's env
    env_of = out.obs.squeeze(-1) // 10
    assert bool(((env_of == env_of[:, :1]) | ~out.mask).all())


def test_burnin_lengthens_samples_and_sampling_draws_every_start():
    buffer = ReplayBuffer(dict(replay_buffer_size=20, sequence_length=3, burnin_step=2))
    buffer.push(_episodes([5, 3]))
    torch.manual_seed(0)
    batch = buffer.sample(200)
    assert tuple(batch.obs.shape) == (200, 5, 1) and tuple(batch.mask.shape) == (200, 5)
    assert set(batch.obs[:, 0, 0].tolist()) == {10, 11, 12, 13, 14, 20, 21, 22}


def test_links_follow_the_ring_and_a_load_rebuilds_them():
    """Pushes that overwrite the oldest slots never link a sequence into another env's or episode's steps; a
    buffer loaded from a file samples the same sequences (same size, or rebuilt at another size)."""
    buffer = ReplayBuffer(dict(replay_buffer_size=7, sequence_length=4))
    for k in range(4):  # 4 x 8 transitions through 7 slots, one push per env step
        rows = _episodes([5, 3], start_value=10.0 * (1 + 2 * k))
        for t in range(0, len(rows), 2):
            buffer.push(rows[t:t + 2])
    out = buffer._gather(torch.arange(7))
    values = out.obs.squeeze(-1)
    steps = values.remainder(10)
    assert bool(((steps[:, 1:] == steps[:, :-1] + 1) | ~out.mask[:, 1:]).all())  # consecutive steps only
    assert bool(((values - steps) == (values - steps)[:, :1]).where(out.mask, True).all())  # one episode
    for size in (7, 12):
        loaded = ReplayBuffer(dict(replay_buffer_size=size, sequence_length=4))
        loaded.load_state_dict(buffer.state_dict())
        order = (buffer._ptr - buffer._count + torch.arange(buffer._count)) % 7  # oldest first
        slots = order if size == 7 else torch.arange(7)
        again = loaded._gather(slots)
        assert torch.equal(again.obs, out.obs[order]) and torch.equal(again.mask, out.mask[order])


def test_a_sequence_buffer_refuses_transitions_without_their_env_and_episode():
    buffer = ReplayBuffer(dict(replay_buffer_size=10, sequence_length=4))
    try:
        buffer.push([dict(obs=torch.zeros(1), reward=torch.tensor(0.0))])
    except ValueError as error:
        assert 'env_id and episode_start' in str(error)
    else:
        raise AssertionError('pushed transitions without env_id into a sequence buffer')


def test_prioritized_buffer_samples_sequences_from_their_first_steps():
    buffer = PrioritizedReplayBuffer(dict(replay_buffer_size=20, sequence_length=4))
    buffer.push(_episodes([5, 3]))
    buffer.update({'replay_buffer_idx': torch.arange(8), 'priority': torch.tensor([1e-6] * 7 + [1.0])})
    batch = buffer.sample(16)
    assert batch.obs[:, 0, 0].tolist() == [14.0] * 16 and batch.replay_buffer_idx.tolist() == [7] * 16
    assert batch.mask[:, 1:].sum() == 0 and tuple(batch.priority_IS.shape) == (16,)
