"""Observation normalisation (env.norm_obs): statistics from collected data only, raw observations in the buffer,
the same statistics in evaluation and after loading, and a resumed run bitwise the uninterrupted one."""
from __future__ import annotations

import csv
import os

import pytest
import torch

from entry import eval as evaluate
from entry import serial_pipeline
from ding_lite.utils import load_file
from tests.entry.pipeline.test_resume import _cfg, _crash_at, _same_params


def _normalised(exp_dir, manager: str = 'base'):
    main, create = _cfg(exp_dir, manager)
    main.env.norm_obs = dict(use_norm=True, clip=5.0)
    return main, create


def test_statistics_come_from_collected_observations_which_the_buffer_keeps_raw(tmp_path):
    main, create = _normalised(tmp_path / 'run')
    policy = serial_pipeline((main, create), seed=0, max_train_iter=30)
    state = load_file(str(tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar'))
    obs = load_file(str(tmp_path / 'run' / 'ckpt' / state['buffer_file']))['replay_buffer']['data'][('obs',)]
    model = state['model']
    assert model['obs_norm.count'].item() == len(obs) == state['last_envstep']  # evaluations add nothing
    torch.testing.assert_close(model['obs_norm.mean'], obs.double().mean(0))   # raw observations in the buffer
    torch.testing.assert_close(model['obs_norm.var'], obs.double().var(0, unbiased=False))
    x = obs[:4]
    expected = ((x - obs.mean(0)) / obs.var(0, unbiased=False).add(1e-8).sqrt()).clamp(-5, 5)
    torch.testing.assert_close(policy.model.obs_norm(x), expected, rtol=1e-4, atol=1e-5)
    mu = policy.eval_mode.forward({0: x[0]})[0]['action']  # the eval actor acts on normalised observations
    torch.testing.assert_close(mu, torch.tanh(policy.model.actor(expected[:1])[0])[0])


def test_eval_after_loading_matches_the_evaluation_during_training(tmp_path):
    main, create = _normalised(tmp_path / 'run')
    serial_pipeline((main, create), seed=0, max_train_iter=30)
    rows = list(csv.DictReader(open(tmp_path / 'run' / 'log' / 'evaluator.csv')))
    best = max(float(r['return_mean']) for r in rows)
    ckpt = str(tmp_path / 'run' / 'ckpt' / 'ckpt_best.pth.tar')
    assert evaluate((main, create), seed=0, load_path=ckpt) == pytest.approx(best, rel=1e-5)
    assert load_file(ckpt)['model']['obs_norm.count'].item() > 0


def test_a_normalised_run_resumed_equals_the_uninterrupted_one(tmp_path, monkeypatch):
    straight = serial_pipeline(_normalised(tmp_path / 'straight'), seed=0, max_train_iter=40)
    with monkeypatch.context() as patch:
        _crash_at(patch, 23)
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline(_normalised(tmp_path / 'crashed'), seed=0, max_train_iter=40)
    resumed = serial_pipeline(_normalised(tmp_path / 'crashed'), seed=0, max_train_iter=40, resume=True)
    assert 'obs_norm.mean' in resumed.model.state_dict() and _same_params(straight, resumed)
    assert os.path.exists(tmp_path / 'crashed' / 'ckpt' / 'ckpt_last.pth.tar')
