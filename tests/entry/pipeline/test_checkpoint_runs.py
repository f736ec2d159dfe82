"""Checkpoint as a user runs it: the tests of ``tests.ding_lite.test_checkpoint`` that train or load through ``entry``
(the core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import copy

from easydict import EasyDict
import pytest
import torch

from ding_lite.worker import NonFiniteError, load_checkpoint
from entry import serial_pipeline
from policy_zoo import SACPolicy
from tests.conftest import TINY_CREATE, TINY_PENDULUM
from tests.ding_lite.test_checkpoint import _nan_after


def test_non_finite_loss_stops_the_run_naming_loss_iteration_and_last_checkpoint(tmp_path, monkeypatch):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / 'run')
    _nan_after(monkeypatch, 13)
    with pytest.raises(NonFiniteError, match=r"non-finite critic_loss by train iteration 15: training stopped .* "
                                             r"Last good checkpoint: .*iteration_10.pth.tar"):
        serial_pipeline((main, TINY_CREATE), seed=0, max_train_iter=100)
    assert not (tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar').exists()  # nothing non-finite was written


def test_skip_mode_undoes_and_counts_non_finite_steps(tmp_path, monkeypatch):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / 'run')
    main.policy.learn.learner.on_nonfinite = 'skip'
    reference = copy.deepcopy(main)
    reference.exp_name = str(tmp_path / 'reference')
    stopped = serial_pipeline((reference, TINY_CREATE), seed=0, max_train_iter=12)  # the run before the bad steps
    original, calls = SACPolicy._update, [0]

    def update(self, batch):  # from call 13 on, a NaN reward poisons the critics' gradients and Adam's weights
        calls[0] += 1
        if calls[0] >= 13:
            batch.reward = batch.reward * float('nan')
        return original(self, batch)
    monkeypatch.setattr(SACPolicy, '_update', update)
    policy = serial_pipeline((main, TINY_CREATE), seed=0, max_env_step=100)  # 15 learn calls
    assert calls[0] == 15
    for name, value in stopped._model.state_dict().items():  # every bad step undone, weights and all
        assert torch.equal(policy._model.state_dict()[name], value), name
    state = load_checkpoint(str(tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar'))
    assert state['last_iter'] == 12 and state['skipped_steps'] == 3
