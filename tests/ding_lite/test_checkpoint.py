"""Crash-safe writes, safe loading, RNG states, and the learner's numerical guard."""
from __future__ import annotations

import copy
import os
import random

import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_lite.data import load_demo
from ding_lite.utils import get_rng_state, load_file, save_file, set_rng_state
from ding_lite.worker import BaseLearner, NonFiniteError, load_checkpoint
from policy_zoo import SACPolicy
from tests.conftest import TINY_CREATE, TINY_PENDULUM


class Payload:
    """Unpickling this would run code: safe loading must refuse it before that happens."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, 'w'))


def test_a_write_killed_midway_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / 'ckpt.pth.tar'
    save_file(str(path), {'model': {'w': torch.ones(3)}})

    def dies_midway(obj, f):
        f.write(b'partial bytes')
        raise KeyboardInterrupt('killed during the write')
    monkeypatch.setattr(torch, 'save', dies_midway)
    with pytest.raises(KeyboardInterrupt):
        save_file(str(path), {'model': {'w': torch.zeros(3)}})
    monkeypatch.undo()
    assert torch.equal(load_file(str(path))['model']['w'], torch.ones(3))
    assert os.listdir(tmp_path) == ['ckpt.pth.tar']


def test_a_resume_point_killed_midway_is_never_the_one_loaded(tmp_path, monkeypatch):
    import ding_lite.worker.learner as learner_module
    policy = SACPolicy(_policy_cfg(), enable_field=['learn'])
    learner = BaseLearner({}, policy.learn_mode, exp_name=str(tmp_path))
    learner.save_checkpoint('iteration_1.pth.tar', resume_point=True)
    original, calls = learner_module.save_file, []

    def dies_on_the_checkpoint(path, obj):
        calls.append(path)
        if path.endswith('iteration_2.pth.tar'):
            raise KeyboardInterrupt('killed')
        original(path, obj)
    monkeypatch.setattr(learner_module, 'save_file', dies_on_the_checkpoint)
    learner.attach('replay_buffer', _FakeBuffer(), buffer=True)
    with pytest.raises(KeyboardInterrupt):
        learner.save_checkpoint('iteration_2.pth.tar', resume_point=True)
    assert calls[0].endswith('iteration_2.buffer.pth.tar')  # the buffer first, the checkpoint, then 'latest'
    assert (tmp_path / 'ckpt' / 'latest').read_text().strip() == 'iteration_1.pth.tar'
    assert load_checkpoint(str(tmp_path / 'ckpt' / 'iteration_1.pth.tar'))['last_iter'] == 0


class _FakeBuffer:
    def state_dict(self):
        return {'kind': 'ding_lite.replay_buffer', 'data': {}}


def _policy_cfg() -> EasyDict:
    from ding_lite.config import compile_config
    main = copy.deepcopy(TINY_PENDULUM)
    return compile_config(main, create_cfg=copy.deepcopy(TINY_CREATE), save_cfg=False).policy


@pytest.mark.parametrize('what', ['checkpoint', 'demonstrations', 'buffer'])
def test_files_that_need_pickled_code_are_refused_without_running_it(tmp_path, what):
    marker = tmp_path / 'code_ran'
    path = tmp_path / 'hostile.pt'
    torch.save({'kind': 'ding_lite.demonstrations', 'version': 1, 'model': Payload(str(marker))}, path)
    load = {'checkpoint': load_checkpoint, 'demonstrations': load_demo,
            'buffer': lambda p: __import__('ding_lite.data', fromlist=['ReplayBuffer']).ReplayBuffer().load(p)}[what]
    with pytest.raises(ValueError, match=r'holds more than tensors and plain containers .* refuses to load'):
        load(str(path))
    assert not marker.exists()


def test_rng_states_round_trip_through_a_safe_file(tmp_path):
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    save_file(str(tmp_path / 'rng.pt'), get_rng_state())
    expected = (random.random(), np.random.rand(), torch.rand(1))
    set_rng_state(load_file(str(tmp_path / 'rng.pt')))
    assert (random.random(), np.random.rand(), torch.rand(1)) == expected


def _nan_after(monkeypatch, call: int, key: str = 'critic_loss') -> None:
    original, calls = SACPolicy._forward_learn, [0]

    def forward(self, data):
        calls[0] += 1
        out = original(self, data)
        return {**out, key: out[key] * float('nan')} if calls[0] >= call else out
    monkeypatch.setattr(SACPolicy, '_forward_learn', forward)


def test_non_finite_parameters_are_never_written(tmp_path):
    policy = SACPolicy(_policy_cfg(), enable_field=['learn'])
    learner = BaseLearner({}, policy.learn_mode, exp_name=str(tmp_path))
    with torch.no_grad():
        next(policy._model.parameters()).fill_(float('inf'))
    with pytest.raises(NonFiniteError, match='non-finite model parameters'):
        learner.save_checkpoint('ckpt_best.pth.tar')
    assert not (tmp_path / 'ckpt' / 'ckpt_best.pth.tar').exists()


def test_a_ctrl_c_during_a_write_waits_for_the_file(tmp_path):
    import signal
    from ding_lite.utils.checkpoint import _atomic
    path = tmp_path / 'latest'

    def write(f) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the write (a torch.save would abort on it)
        f.write('ckpt_last.pth.tar')
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, whatever ran before
    try:
        with pytest.raises(KeyboardInterrupt):
            _atomic(str(path), write, 'w')
    finally:
        signal.signal(signal.SIGINT, previous)
    assert path.read_text() == 'ckpt_last.pth.tar'                  # then the interrupt, with the file complete


def test_a_ctrl_c_during_a_tensorboard_write_or_close_waits_for_it(tmp_path):
    """A KeyboardInterrupt raised inside tensorboardX's queue can leave its lock held: the run's closing then hung
    for ever (a second Ctrl-C). The interrupt waits until every scalar of the call is queued, or the writer closed."""
    import signal
    from ding_lite.worker.logger import build_tb_logger, write_scalars
    writer, written = build_tb_logger(str(tmp_path)), []
    add_scalar = writer.add_scalar

    def add_and_interrupt(tag: str, value: float, step: int) -> None:
        if not written:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the first scalar is queued
        add_scalar(tag, value, step)
        written.append(tag)
    writer.add_scalar = add_and_interrupt
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            write_scalars(writer, 'learner', {'a': 1.0, 'b': 2.0, 'c': 3.0}, step=5)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert written == ['learner/a', 'learner/b', 'learner/c']
    events = writer.file_writer.event_writer
    flush = events.flush
    events.flush = lambda: (os.kill(os.getpid(), signal.SIGINT), flush())  # Ctrl-C as it closes
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            writer.close()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert events._closed  # closed to the end, so the exit's own close has nothing left to do


def test_a_ctrl_c_as_the_handlers_come_back_leaves_none_of_the_deferring_ones_behind(monkeypatch):
    """A second Ctrl-C raises from the run's handler the moment it is back: SIGTERM's own must be back already,
    or SIGTERM would be swallowed for the rest of the process."""
    import signal
    from ding_lite.utils import signals_deferred
    set_handler = signal.signal

    def set_and_interrupt(number, handler):
        previous = set_handler(number, handler)
        if number == signal.SIGINT and handler is signal.default_int_handler:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as soon as Python's own handler is back
        return previous
    before = {number: set_handler(number, handler) for number, handler in
              ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL))}
    try:
        monkeypatch.setattr(signal, 'signal', set_and_interrupt)
        with pytest.raises(KeyboardInterrupt):
            with signals_deferred():
                pass
        monkeypatch.undo()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        for number, handler in before.items():
            set_handler(number, handler)
