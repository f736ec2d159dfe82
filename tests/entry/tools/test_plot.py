"""``ding_lite plot``: grouping runs by experiment, the mean and band over seeds, the PNG, clear errors."""
from __future__ import annotations

import numpy as np
import pytest

from entry.cli import main
from entry.tools.plot import aggregate, experiment_name, group_runs, plot_curves, read_curve

pytest.importorskip('matplotlib', reason="plotting needs matplotlib: pip install 'ding-lite[plot]'")

HEADER = 'train_iter,envstep,wall_time,return_mean,return_std,return_min,return_max\n'


def _run(tmp_path, name, points):
    log = tmp_path / name / 'log'
    log.mkdir(parents=True)
    rows = ''.join(f"{i * 10},{x},{x / 100:.3f},{y},1,{y - 1},{y + 1}\n" for i, (x, y) in enumerate(points))
    (log / 'evaluator.csv').write_text(HEADER + rows)
    return str(tmp_path / name)


def test_runs_are_grouped_by_name_without_their_seed(tmp_path):
    runs = [_run(tmp_path, 'pendulum_sac_seed0', [(0, 1)]), _run(tmp_path, 'baseline', [(0, 1)]),
            _run(tmp_path, 'pendulum_sac_seed1_231123_101010_ab12', [(0, 1)]), _run(tmp_path, 'hopper_seed2', [(0, 1)])]
    assert group_runs(runs) == {'pendulum_sac': [runs[0], runs[2]], 'baseline': [runs[1]], 'hopper': [runs[3]]}
    assert experiment_name(runs[2] + '/') == 'pendulum_sac'


def test_mean_and_band_over_seeds_on_the_union_of_their_steps():
    one = (np.array([0., 10., 20.]), np.array([0., 10., 20.]))
    two = (np.array([0., 20.]), np.array([10., 30.]))       # at 10 it interpolates to 20
    short = (np.array([0., 10.]), np.array([4., 4.]))       # counts only where it reached
    grid, mean, low, high = aggregate([one, two, short])
    assert grid.tolist() == [0., 10., 20.]
    np.testing.assert_allclose(mean, [14 / 3, 34 / 3, 25.])
    np.testing.assert_allclose(low, [0., 4., 20.])
    np.testing.assert_allclose(high, [10., 20., 30.])
    _, mean, low, high = aggregate([one, two], band='std')
    np.testing.assert_allclose(high - mean, [5., 5., 5.])


def test_plot_writes_a_png_and_the_cli_prints_its_path(tmp_path, capsys):
    runs = [_run(tmp_path, f'exp_seed{k}', [(0, -1000 + k), (1000, -500), (2000 + k * 500, -200)]) for k in range(2)]
    out = plot_curves(runs + [_run(tmp_path, 'other', [(0, -900), (1500, -300)])], str(tmp_path / 'c.png'),
                      x='wall_time', band='std')
    data = open(out, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n' and len(data) > 5000
    assert main(['plot', *runs, '-o', str(tmp_path / 'sub' / 'curve.png')]) == 0
    assert f"wrote {tmp_path / 'sub' / 'curve.png'}" in capsys.readouterr().out
    assert (tmp_path / 'sub' / 'curve.png').stat().st_size > 5000


def test_a_folder_without_evaluations_is_a_clear_error(tmp_path, capsys):
    (tmp_path / 'empty').mkdir()
    assert main(['plot', str(tmp_path / 'empty')]) == 1
    assert 'has no evaluation log' in capsys.readouterr().err
    with pytest.raises(ValueError, match='x must be one of envstep, wall_time, train_iter'):
        read_curve(_run(tmp_path, 'ok', [(0, 1)]), x='time')
