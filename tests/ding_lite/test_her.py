"""Hindsight experience replay: relabelled goals and rewards on hand-made episodes, the relabelled share, resume."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.config import ConfigError, compile_config
from ding_lite.data import HerReplayBuffer

ACHIEVED, DESIRED = slice(0, 2), slice(2, 4)  # PointGoal's flat layout: achieved_goal, desired_goal, observation


def _reward(achieved, desired, info):
    assert len(info) == len(achieved)
    return -(np.linalg.norm(achieved - desired, axis=-1) > 0.05).astype(np.float32)


def _episodes(buffer: HerReplayBuffer, lengths: dict[int, int], goal: float = 9.0) -> None:
    """Each env's episode of ``lengths[env]`` steps, the envs' steps interleaved; env e's point at step t is at
    ``(e, t + 1)`` after it, its desired goal ``(goal, goal)``; each env then starts a second episode (one step)."""
    steps = []
    for t in range(max(lengths.values()) + 1):
        for env, length in lengths.items():
            if t <= length:  # step `length` is the next episode's first
                start = t in (0, length)
                pos, nxt = (env, t if t < length else 100.0), (env, t + 1.0 if t < length else 101.0)
                obs = np.array([*pos, goal, goal, *pos], np.float32)
                next_obs = np.array([*nxt, goal, goal, *nxt], np.float32)
                steps.append(dict(obs=obs, next_obs=next_obs, action=np.zeros(2, np.float32), reward=np.float32(-1),
                                  done=False, env_id=np.int64(env), episode_start=np.bool_(start)))
    buffer.push(steps)


def _buffer(strategy: str, n_sampled_goal: int = 10 ** 6, size: int = 100) -> HerReplayBuffer:
    buffer = HerReplayBuffer(dict(replay_buffer_size=size, her=dict(n_sampled_goal=n_sampled_goal,
                                                                    goal_selection_strategy=strategy)))
    buffer.bind_goals(ACHIEVED, DESIRED, _reward)
    return buffer


@pytest.mark.parametrize('strategy', ['future', 'final', 'episode'])
def test_relabelled_transitions_carry_a_goal_of_their_episode_and_its_reward(strategy):
    torch.manual_seed(0)
    buffer = _buffer(strategy)
    _episodes(buffer, {0: 5, 1: 3})
    batch = buffer.sample(400)
    env, t = batch.obs[:, 0], batch.obs[:, 1]
    goal = batch.obs[:, DESIRED]
    finished = t < 100                                          # the second episodes are still running
    assert (goal[~finished] == 9.0).all()                       # not relabelled
    assert torch.equal(batch.next_obs[:, DESIRED], goal)        # obs and next obs alike
    goal, env, t = goal[finished], env[finished], t[finished]
    assert (goal[:, 0] == env).all()                            # a point of the same env's episode
    length = torch.where(env == 0, 5.0, 3.0)
    low = {'future': t + 1, 'final': length, 'episode': torch.ones_like(t)}[strategy]
    high = length if strategy != 'final' else length
    assert ((goal[:, 1] >= low) & (goal[:, 1] <= high)).all()
    if strategy != 'final':                                     # every allowed goal drawn
        assert len(torch.unique(goal[env == 0][:, 1])) == 5
    reached = (batch.next_obs[finished][:, 1] == goal[:, 1]).float() - 1  # 0 where the step achieved its goal
    assert torch.equal(batch.reward[finished], reached)
    assert (batch.reward[~finished] == -1).all()


def test_the_relabelled_share_follows_n_sampled_goal():
    torch.manual_seed(0)
    buffer = _buffer('future', n_sampled_goal=4)
    _episodes(buffer, {0: 40, 1: 40})
    batch = buffer.sample(4000)
    finished = batch.obs[:, 1] < 100
    relabelled = (batch.obs[finished][:, 2] != 9.0).float().mean().item()
    assert abs(relabelled - 0.8) < 0.03                         # 1 - 1 / (4 + 1)


def test_overwritten_steps_leave_their_episode():
    torch.manual_seed(0)
    buffer = _buffer('episode', size=20)                        # env 0's first steps are overwritten
    _episodes(buffer, {0: 30})
    batch = buffer.sample(500)
    finished = batch.obs[:, 1] < 100
    assert (batch.obs[finished][:, 3] >= 12).all()              # goals only from steps still in the buffer


def test_a_loaded_buffer_samples_as_the_saved_one(tmp_path):
    buffer = _buffer('future', n_sampled_goal=4, size=50)
    _episodes(buffer, {0: 20, 1: 35})                           # the ring has wrapped
    buffer.save(str(tmp_path / 'b.pth'))
    loaded = _buffer('future', n_sampled_goal=4, size=50)
    loaded.load(str(tmp_path / 'b.pth'))
    torch.manual_seed(1)
    expected = buffer.sample(300)
    torch.manual_seed(1)
    got = loaded.sample(300)
    assert all(torch.equal(expected[k], got[k]) for k in ('obs', 'next_obs', 'reward'))


def test_bad_her_settings_are_refused_at_compile(tiny_pendulum):
    main, create = tiny_pendulum
    for her, match in ((dict(goal_selection_strategy='later'), 'goal_selection_strategy must be one of'),
                       (dict(n_sampled_goal=0), 'n_sampled_goal must be an int >= 1'),
                       (dict(k=4), 'unknown keys')):
        main.policy.other.replay_buffer.her = her
        with pytest.raises(ConfigError, match=match):
            compile_config(main, create_cfg=create, save_cfg=False)
