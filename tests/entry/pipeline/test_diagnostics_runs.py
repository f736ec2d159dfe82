"""Diagnostics as a user runs it: the tests of ``tests.policy_zoo.test_diagnostics`` that train or load through
``entry`` (the core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import pytest

from entry import serial_pipeline
from tests.tb_events import read_scalars


def test_a_run_logs_the_diagnostics_to_tensorboard(tiny_pendulum):
    main, create = tiny_pendulum
    serial_pipeline((main, create), seed=0, max_train_iter=10)  # log_show_after_iter = 5
    scalars = read_scalars(f'{main.exp_name}/log/serial')
    for name in ('q_value_1', 'q_value_2', 'grad_norm_critic', 'grad_norm_actor', 'mu', 'log_sigma'):
        steps = [step for step, _ in scalars[f'learner/{name}']]
        assert steps == [5, 10], name
    for (_, q), (_, q1), (_, q2) in zip(*(scalars[f'learner/{k}'] for k in ('q_value', 'q_value_1', 'q_value_2'))):
        assert q == pytest.approx((q1 + q2) / 2, rel=1e-5)
    assert all(value > 0 for _, value in scalars['learner/grad_norm_critic'])
