"""Where a serial run's time goes: time/collect, time/learn, time/eval and time/other as shares of the wall time
since the last log, with env steps/s and updates/s, to tensorboard and log/time.txt at the learner's log rate."""
from __future__ import annotations

import time

import pytest

import entry.kit.life_cycle as run_module
from entry import serial_pipeline
from entry.kit.life_cycle import PhaseTimer


def test_phase_timer_shares_and_rates(monkeypatch):
    clock = iter([0.0, 1.0, 3.0, 4.0, 4.5, 10.0, 11.0, 12.0, 12.5])  # perf_counter, call by call
    monkeypatch.setattr(time, 'perf_counter', lambda: next(clock))
    timer = PhaseTimer(envstep=100, train_iter=10)     # t = 0
    with timer.phase('collect'):                       # 1 -> 3: 2 s
        pass
    with timer.phase('learn'):                         # 4 -> 4.5: 0.5 s
        pass
    report = timer.report(envstep=300, train_iter=60)  # t = 10
    assert report == pytest.approx({'collect': 0.2, 'learn': 0.05, 'eval': 0.0, 'other': 0.75,
                                    'env_steps_per_s': 20.0, 'updates_per_s': 5.0})
    with timer.phase('eval'):                          # 11 -> 12: the next report starts afresh at 10
        pass
    assert timer.report(envstep=300, train_iter=60) == pytest.approx(  # t = 12.5
        {'collect': 0.0, 'learn': 0.0, 'eval': 0.4, 'other': 0.6, 'env_steps_per_s': 0.0, 'updates_per_s': 0.0})


def test_a_serial_run_logs_its_times_at_the_learners_log_rate(tiny_pendulum, monkeypatch):
    written = []
    write = run_module.write_scalars
    monkeypatch.setattr(run_module, 'write_scalars', lambda tb, prefix, scalars, step: written.append(
        (prefix, dict(scalars), step)) or write(tb, prefix, scalars, step))
    main, create = tiny_pendulum
    serial_pipeline((main, create), seed=0, max_train_iter=20)  # log_show_after_iter = 5
    times = [scalars for prefix, scalars, _ in written if prefix == 'time']
    assert len(times) == 4 and all(set(t) == {'collect', 'learn', 'eval', 'other', 'env_steps_per_s',
                                              'updates_per_s'} for t in times)
    for t in times:
        assert sum(t[k] for k in ('collect', 'learn', 'eval', 'other')) == pytest.approx(1.0)
        assert t['learn'] > 0 and t['collect'] > 0 and t['updates_per_s'] > 0 and t['env_steps_per_s'] > 0
    assert times[0]['eval'] > 0  # the evaluation at iteration 0 falls in the first span
    lines = open(f'{main.exp_name}/log/time.txt').read().splitlines()
    assert len(lines) == 4 and 'iter 20 ' in lines[-1] and 'updates_per_s' in lines[-1]
