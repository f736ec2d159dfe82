"""The warm-up's random actions: a batch of them (drawn ahead in blocks where the space allows) is the values the
space's own ``sample`` gives, call after call."""
from __future__ import annotations

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch

from entry.kit.run_parts import RandomCollectPolicy


@pytest.mark.parametrize('space', [
    gym.spaces.Box(-1.0, 1.0, (6,), np.float32),                                            # MuJoCo's
    gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32)),    # bounds per coordinate
    gym.spaces.Box(-1.0, np.inf, (3,), np.float32),                                         # unbounded above
    gym.spaces.Box(0, 5, (2,), np.int64),                                                   # integers
    gym.spaces.Discrete(4)])
def test_a_batch_of_random_actions_is_the_spaces_samples_one_after_another(space):
    policy = SimpleNamespace(cfg=None, process_transition=None, get_train_sample=None)
    batched = RandomCollectPolicy(policy, space, seed=7)
    batched.BLOCK = 8                          # (blocks of 8: the draws below cross three of them)
    rows = [batched.forward_batch(torch.zeros(n, 3))['action'] for n in (4, 1, 5, 11)]
    rows.append(torch.stack([a['action'] for a in batched.forward({0: None, 1: None, 2: None}).values()]))
    rows = torch.cat(rows)
    space.seed(7)
    one_by_one = torch.as_tensor(np.stack([space.sample() for _ in range(24)]))
    assert rows.dtype == one_by_one.dtype and torch.equal(rows, one_by_one)

