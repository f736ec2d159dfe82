"""Pixels beside vectors: a Dict{image, vector} observation gets a conv encoder for the image, the vector beside its
features, uint8 kept in the buffer; it learns what the vector alone cannot (CLI), and predict takes Dicts."""
from __future__ import annotations

import csv
import pprint
import subprocess

import numpy as np
import pytest
import torch

from ding_lite.utils import load_file

ENVS = '''
import gymnasium as gym
import numpy as np


class GoalSide(gym.Env):
    """Push a point on [-1, 1] (the vector) to a goal at -0.8 or +0.8 that only the 7x7 image shows."""

    def __init__(self):
        self.observation_space = gym.spaces.Dict({
            'image': gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),
            'position': gym.spaces.Box(-1.0, 1.0, (1,), np.float32)})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _obs(self):
        image = np.zeros((7, 7, 3), np.uint8)
        image[:, 0 if self.goal < 0 else 6, 1] = 255
        return {'image': image, 'position': np.array([self.x], np.float32)}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = float(self.np_random.uniform(-0.2, 0.2)), 0
        self.goal = float(self.np_random.choice([-0.8, 0.8]))
        return self._obs(), {}

    def step(self, action):
        self.x, self.t = float(np.clip(self.x + 0.25 * float(action[0]), -1, 1)), self.t + 1
        return self._obs(), -abs(self.x - self.goal), False, self.t >= 15, {}


gym.register('GoalSide-v0', entry_point=GoalSide)
'''
# The vector alone cannot tell the goal's side: its best is to stay near 0, about -0.8 a step (-12 an episode).
# With the image it reaches the goal in 3-4 steps: about -3 (seeds 0-4 passed -6 by 708-812 env steps).
THRESHOLD = -6.0


def _write(tmp_path) -> None:
    main = dict(exp_name='goal_seed0', env=dict(env_id='GoalSide-v0', collector_env_num=4, evaluator_env_num=4,
                                                n_evaluator_episode=8, stop_value=THRESHOLD),
                policy=dict(random_collect_size=500,
                            model=dict(encoder_hidden_size_list=[16, 16, 32], encoder_kernel_size=[3, 3],
                                       encoder_stride=[1, 1], actor_head_hidden_size=64, critic_head_hidden_size=64),
                            learn=dict(batch_size=64, update_per_collect=8, learning_rate_q=1e-3,
                                       learning_rate_policy=1e-3),
                            collect=dict(n_sample=8), eval=dict(evaluator=dict(eval_freq=100))))
    create = dict(env=dict(type='gymnasium', import_names=['goal_envs']), policy=dict(type='sac'))
    (tmp_path / 'goal_envs.py').write_text(ENVS)
    (tmp_path / 'cfg.py').write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(create)}\n")


def test_a_dict_of_image_and_vector_learns_what_the_vector_alone_cannot(tmp_path, monkeypatch):
    _write(tmp_path)
    run = subprocess.run(['ding_lite', '-m', 'serial', '-c', 'cfg.py', '--max-env-step', '3000'], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Dict: images ['image'] as uint8 CHW" in run.stderr
    folder = tmp_path / 'goal_seed0'
    rows = list(csv.DictReader(open(folder / 'log' / 'evaluator.csv')))
    assert max(float(r['return_mean']) for r in rows) >= THRESHOLD, [r['return_mean'] for r in rows]
    state = load_file(str(folder / 'ckpt' / 'ckpt_last.pth.tar'))
    stored = load_file(str(folder / 'ckpt' / state['buffer_file']))['replay_buffer']['data']
    assert stored[('obs', 'image')].dtype == torch.uint8 and stored[('obs', 'image')].shape[1:] == (3, 7, 7)
    assert stored[('obs', 'position')].dtype == torch.float32

    monkeypatch.syspath_prepend(str(tmp_path))
    from entry import load_policy
    agent = load_policy(str(folder))
    left, right = ({'image': np.zeros((7, 7, 3), np.uint8), 'position': np.zeros(1, np.float32)} for _ in range(2))
    left['image'][:, 0, 1] = right['image'][:, 6, 1] = 255
    one = agent.predict(left)
    assert one.shape == (1,) and one[0] < 0  # towards the goal the image shows
    batch = agent.predict([left, right])
    assert batch.shape == (2, 1) and batch[0, 0] < 0 < batch[1, 0]
    stacked = agent.predict({key: np.stack([left[key], right[key]]) for key in left})  # a Dict of batches
    np.testing.assert_allclose(stacked, batch)
    with pytest.raises(ValueError, match=r"observation key 'image' has shape \(7, 7\); expected \(7, 7, 3\)"):
        agent.predict({'image': np.zeros((7, 7), np.uint8), 'position': np.zeros(1, np.float32)})
    with pytest.raises(ValueError, match=r"observation keys \['image'\]; expected \['image', 'position'\]"):
        agent.predict({'image': left['image']})
