"""An env's bad values are named at the boundary, through the CLI: a NaN before it enters the buffer, observations
far from unit scale at the start-up check."""
from __future__ import annotations

import pprint
import re
import subprocess

import torch

ENVS = '''
import math

import gymnasium as gym
import numpy as np


class Faulty(gym.Env):
    """A point to drive to zero; ``nan_every`` steps give a NaN reward, ``scale`` multiplies the float64 obs."""

    def __init__(self, nan_every=0, scale=1.0):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.nan_every, self.scale, self.count = nan_every, scale, 0

    def _obs(self):
        return np.array([self.x, 1.0, -1.0]) * self.scale

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = float(self.np_random.uniform(-1, 1)), 0
        return self._obs(), {}

    def step(self, action):
        self.x, self.t, self.count = float(np.clip(self.x + 0.2 * float(action[0]), -2, 2)), self.t + 1, self.count + 1
        reward = math.nan if self.nan_every and self.count % self.nan_every == 0 else -abs(self.x)
        return self._obs(), reward, False, self.t >= 20, {}


gym.register('NaNReward-v0', entry_point=Faulty, kwargs=dict(nan_every=70))
gym.register('LargeObs-v0', entry_point=Faulty, kwargs=dict(scale=1e4))
'''


def _config(tmp_path, env_id: str, exp: str = 'run', **learner) -> str:
    main = dict(exp_name=str(tmp_path / exp), env=dict(env_id=env_id, collector_env_num=2, evaluator_env_num=1,
                                                          n_evaluator_episode=1),
                policy=dict(random_collect_size=40, model=dict(actor_head_hidden_size=16, critic_head_hidden_size=16),
                            learn=dict(batch_size=16, learner=dict(learner, hook=dict(save_ckpt_after_iter=10))),
                            collect=dict(n_sample=4, collector=dict(collect_print_freq=10)),
                            eval=dict(evaluator=dict(eval_freq=20))))
    create = dict(env=dict(type='gymnasium', import_names=['faulty_envs']), policy=dict(type='sac'))
    (tmp_path / 'faulty_envs.py').write_text(ENVS)
    (tmp_path / 'cfg.py').write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(create)}\n")
    return 'cfg.py'


def _serial(tmp_path, config: str, steps: int) -> subprocess.CompletedProcess:
    return subprocess.run(['ding_lite', '-m', 'serial', '-c', config, '--max-env-step', str(steps)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def test_a_nan_reward_names_the_env_step_and_field_and_never_enters_the_buffer(tmp_path):
    run = _serial(tmp_path, _config(tmp_path, 'NaNReward-v0'), 400)
    assert run.returncode == 1
    error = run.stderr.strip().splitlines()[-1]
    assert "NonFiniteEnvError: env 'NaNReward-v0' (env " in error and 'returned a non-finite reward at env step ' \
        in error and 'reward=nan' in error and "on_nonfinite='skip'" in error, run.stderr[-2000:]
    assert 'Last resume point: ' in error and 'critic_loss' not in run.stderr and 'eval return nan' not in run.stderr

    # with on_nonfinite='skip' the same env trains: each such transition dropped, counted, none in the buffer
    run = _serial(tmp_path, _config(tmp_path, 'NaNReward-v0', 'skip', on_nonfinite='skip'), 400)
    assert run.returncode == 0, run.stderr[-2000:]
    saved = torch.load(tmp_path / 'skip' / 'ckpt' / 'ckpt_last.buffer.pth.tar', weights_only=False)
    stored = [t for t in _tensors(saved) if t.is_floating_point()]
    assert stored and all(torch.isfinite(t).all() for t in stored)
    counts = re.findall(r'nonfinite_dropped_count[:=] *([0-9.]+)', (tmp_path / 'skip' / 'log' / 'collector.txt').read_text())
    assert counts and float(counts[-1]) >= 2  # each env's 70th and 140th step at least


def _tensors(tree):
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, dict):
        for value in tree.values():
            yield from _tensors(value)


def test_float64_observations_far_from_unit_scale_get_one_warning_naming_the_cure(tmp_path):
    run = _serial(tmp_path, _config(tmp_path, 'LargeObs-v0'), 60)
    assert run.returncode == 0, run.stderr[-2000:]
    warned = [line for line in run.stderr.splitlines() if 'far from unit scale' in line]
    assert len(warned) == 1 and '(float64, cast to float32)' in warned[0] and 'dims [0, 1, 2] reach 1e+04' in \
        warned[0] and 'env.norm_obs.use_norm=True' in warned[0], run.stderr[-2000:]
    run = subprocess.run(['ding_lite', '-m', 'serial', '-c', 'cfg.py', '--max-env-step', '60', '--set',
                          'env.norm_obs.use_norm=True'], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and 'far from unit scale' not in run.stderr, run.stderr[-2000:]
