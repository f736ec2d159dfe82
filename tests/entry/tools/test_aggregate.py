"""Aggregates over seeds (rliable's method, in numpy): IQM, mean, median, optimality gap, stratified bootstrap."""
from __future__ import annotations

import itertools
import os
import subprocess

import numpy as np
import pytest

from entry.cli import main
from entry.tools.aggregate import interval, iqm, optimality_gap, profile, statistic


def test_iqm_and_optimality_gap_by_hand():
    assert iqm(np.array([4, 1, 100, 2, 3, 50, 6, 5])) == pytest.approx(4.5)   # the middle half: 3, 4, 5, 6
    assert iqm(np.array([7.0, 1.0, 3.0, 9.0, 5.0])) == pytest.approx(5.0)      # a quarter of 5 is 1 each end
    assert optimality_gap(np.array([-300.0, -100.0, -250.0]), -200.0) == pytest.approx((100 + 0 + 50) / 3)
    with pytest.raises(ValueError, match='needs the score to reach'):
        statistic('optimality_gap')


def test_bootstrap_interval_matches_every_resample_enumerated():
    scores = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    exact = [iqm(scores[list(pick)]) for pick in itertools.product(range(5), repeat=5)]  # all 3125 resamples
    low, high = np.percentile(exact, [2.5, 97.5])
    point, mc_low, mc_high = interval(scores, statistic('iqm'), reps=20000)
    assert point == pytest.approx(iqm(scores))
    steps = np.diff(np.unique(exact)).max()                                    # the distribution's coarseness
    assert abs(mc_low - low) <= steps and abs(mc_high - high) <= steps


def test_the_bootstrap_is_stratified_by_task():
    scores = np.array([[0.0, 100.0], [0.0, 100.0], [0.0, 100.0], [1.0, 100.0]])  # [runs, tasks]
    point, low, high = interval(scores[:3], statistic('mean'))                # each task keeps its own runs
    assert (point, low, high) == (50.0, 50.0, 50.0)
    assert interval(scores, statistic('mean'))[1] < interval(scores, statistic('mean'))[2]


def test_iqm_and_its_interval_agree_with_rliable_where_it_runs():
    try:  # (rliable 1.2 needs arch < 8, which fails to import beside pandas 3)
        from rliable import library, metrics
    except Exception as error:
        pytest.skip(f"rliable does not import here: {type(error).__name__}")
    scores = np.random.default_rng(1).normal(-200, 60, size=(10, 3))
    points, intervals = library.get_interval_estimates({'x': scores}, lambda s: np.array([metrics.aggregate_iqm(s)]),
                                                       reps=20000)
    point, low, high = interval(scores, statistic('iqm'), reps=20000)
    assert point == pytest.approx(float(points['x'][0]))
    assert low == pytest.approx(float(intervals['x'][0, 0]), abs=3) and high == pytest.approx(
        float(intervals['x'][1, 0]), abs=3)


def test_performance_profile_and_its_band_by_hand():
    scores = np.array([-300.0, -200.0, -150.0, -150.0])
    assert profile(scores, np.array([-400.0, -250.0, -150.0, -100.0])).tolist() == [1.0, 0.75, 0.0, 0.0]
    point, low, high = interval(scores, lambda s: profile(s, np.array([-250.0, -175.0])), reps=4000)
    assert point.tolist() == [0.75, 0.5]
    # a resample of 4 runs above -250: 1 of 4 is below with p = 1/4 each, so 0.25..1.0 in 95% of resamples
    assert (low[0], high[0]) == (0.25, 1.0) and low[1] <= 0.25 and high[1] >= 0.75
    assert interval(scores[None, :], lambda s: profile(s, np.array([-250.0])))[1:] == (0.75, 0.75)  # 1 run per task


def _runs(tmp_path, returns):
    dirs = []
    for seed, last in enumerate(returns):
        run = tmp_path / f'pend_seed{seed}'
        (run / 'log').mkdir(parents=True)
        (run / 'log' / 'evaluator.csv').write_text(
            'train_iter,envstep,wall_time,return_mean\n0,0,0.1,-1500\n' f'10,1000,1.0,{last}\n')
        dirs.append(str(run))
    return dirs


def test_summary_and_aggregate_plot_through_the_cli(tmp_path, capsys):
    dirs = _runs(tmp_path, [-200.0, -150.0, -900.0, -160.0])
    run = subprocess.run(['ding_lite', 'summary', *dirs, '--gamma', '-180'], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    header, row = run.stdout.splitlines()
    assert header.split() == ['experiment', 'runs', 'last', 'iqm', 'mean', 'median', 'optimality_gap']
    assert row.startswith('pend ') and '-180.0 [' in row                     # IQM of -900,-200,-160,-150: -180
    out = tmp_path / 'iqm.png'
    run = subprocess.run(['ding_lite', 'plot', *dirs, '--aggregate', 'iqm', '-o', str(out)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0 and os.path.getsize(out) > 0, run.stderr
    out = tmp_path / 'profile.png'
    run = subprocess.run(['ding_lite', 'plot', *dirs, '--profile', '-o', str(out)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert run.returncode == 0 and os.path.getsize(out) > 0, run.stderr
    with pytest.raises(SystemExit):                                           # argparse's usage error
        main(['plot', *dirs, '--profile', '--aggregate', 'iqm'])
    assert 'error: --profile draws' in capsys.readouterr().err
