"""``ding_lite bench`` through the CLI: a two-config, two-seed suite's results, the same command again skipping what
finished, an interrupted config resuming, and the refusals before anything trains."""
from __future__ import annotations

import csv
import json
import os
import pprint
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _config(tmp_path, name, **policy):
    main = dict(TINY_PENDULUM, exp_name=name)
    main['policy'] = {**main['policy'], **policy}
    path = tmp_path / f'{name}_config.py'
    path.write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(TINY_CREATE)}\n")
    return str(path)


def _suite(tmp_path, entries):
    path = tmp_path / 'suite.py'
    path.write_text(f"suite = {pprint.pformat(entries)}\n")
    return str(path)


def _bench(*args, cwd):
    return subprocess.run(['ding_lite', 'bench', *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_a_suite_writes_its_results_and_the_same_command_again_trains_nothing(tmp_path):
    small = _config(tmp_path, 'small')
    wide = _config(tmp_path, 'wide', model=dict(obs_shape=3, action_shape=1, actor_head_hidden_size=32,
                                                 critic_head_hidden_size=32))
    suite = _suite(tmp_path, [dict(config=small, max_env_step=400, reference=dict(score=-100.0, source='a paper')),
                              dict(config=wide, max_env_step=400, set={'policy.learn.batch_size': 8})])
    first = _bench('--suite', suite, '--seeds', '0-1', '--out', 'out', cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    rows = list(csv.DictReader(open(tmp_path / 'out' / 'results.csv')))
    assert [r['config'] for r in rows] == ['small', 'wide'] and all(r['seeds'] == '0,1' for r in rows)
    for row in rows:
        assert float(row['iqm_low']) <= float(row['iqm']) <= float(row['iqm_high'])
        assert len(row['final'].split()) == 2 and float(row['env_steps_per_s']) > 0
    assert rows[0]['reference'] == '-100' and rows[0]['reference_source'] == 'a paper'
    table = (tmp_path / 'out' / 'results.md').read_text()
    assert "| small | 0,1 | 400 |" in table and '-100 (a paper)' in table
    assert (tmp_path / 'out' / 'curves.png').stat().st_size > 0 and (tmp_path / 'out' / 'profile.png').exists()
    assert "'batch_size': 8" in (tmp_path / 'out' / 'wide' / 'wide_seed1' / 'total_config.py').read_text()
    checkpoint = tmp_path / 'out' / 'small' / 'small_seed0' / 'ckpt' / 'ckpt_last.pth.tar'
    logs = [tmp_path / 'out' / name / f'{name}_seed{k}' / 'log' / 'evaluator.csv' for name in ('small', 'wide')
            for k in (0, 1)]
    written = [path.stat().st_mtime_ns for path in (checkpoint, *logs)]
    again = _bench('--suite', suite, '--seeds', '0-1', '--out', 'out', cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.count('finished before, skipped') == 2, again.stderr
    assert [path.stat().st_mtime_ns for path in (checkpoint, *logs)] == written  # nothing trained or evaluated
    os.remove(tmp_path / 'out' / 'wide' / 'bench.json')  # as if stopped with its resume points written
    resumed = _bench('--suite', suite, '--seeds', '0-1', '--out', 'out', cwd=tmp_path)
    assert resumed.returncode == 0 and 'continuing from its resume points' in resumed.stdout, resumed.stderr
    assert (tmp_path / 'out' / 'wide' / 'bench.json').exists()


def test_ctrl_c_keeps_the_finished_configs_results_names_the_command_and_that_command_resumes(tmp_path):
    suite = _suite(tmp_path, [dict(config=_config(tmp_path, 'short'), max_env_step=400),
                              dict(config=_config(tmp_path, 'long'), max_env_step=3000)])
    command = ['ding_lite', 'bench', '--suite', suite, '--seeds', '0-1', '--out', 'out']
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    latest = tmp_path / 'out' / 'long' / 'long_seed1' / 'ckpt' / 'latest'
    deadline = time.time() + 120
    while not latest.exists() and time.time() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-2000:]
    rows = list(csv.DictReader(open(tmp_path / 'out' / 'results.csv')))
    assert [r['config'] for r in rows] == ['short']  # written when it finished, before the second began
    hint = next(line for line in (out + err).splitlines() if 'continue it with: ' in line).split('with: ')[1]
    assert hint == f"{shlex.join(command)} (finished configs are skipped, the others resume)"  # not a run's --resume
    again = subprocess.run(shlex.split(hint.split(' (')[0]), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and 'continuing from its resume points' in again.stdout, again.stderr[-2000:]
    assert [r['config'] for r in csv.DictReader(open(tmp_path / 'out' / 'results.csv'))] == ['short', 'long']


def test_a_config_that_does_not_compile_stops_the_suite_before_anything_trains(tmp_path):
    good, bad = _config(tmp_path, 'good'), _config(tmp_path, 'bad')
    suite = _suite(tmp_path, [dict(config=good, max_env_step=60),
                              dict(config=bad, max_env_step=60, set={'policy.learn.batch_sise': 8})])
    ran = _bench('--suite', suite, '--seeds', '0', '--out', 'out', cwd=tmp_path)
    assert ran.returncode != 0 and 'bad_config.py (bad) does not compile' in ran.stderr and 'batch_sise' in ran.stderr
    assert not (tmp_path / 'out' / 'good').exists()


def test_a_suites_unknown_key_and_a_missing_budget_are_named(tmp_path):
    config = _config(tmp_path, 'one')
    ran = _bench('--suite', _suite(tmp_path, [dict(config=config, budget=60)]), cwd=tmp_path)
    assert ran.returncode != 0 and "unknown keys ['budget']" in ran.stderr
    ran = _bench('-c', config, cwd=tmp_path)
    assert ran.returncode != 0 and 'needs --max-env-step' in ran.stderr
    ran = _bench('-c', config, '--suite', 'x.py', cwd=tmp_path)
    assert ran.returncode != 0 and 'one of the two' in ran.stderr


def test_a_suite_runs_its_configs_as_ray_tasks(tmp_path):
    pytest.importorskip('ray')
    suite = _suite(tmp_path, [dict(config=_config(tmp_path, 'one'), max_env_step=200),
                              dict(config=_config(tmp_path, 'two'), max_env_step=200)])
    ray_tmp = tempfile.mkdtemp(prefix='ding_lite_bench_')  # a short path: Ray's sockets need one
    env = {**os.environ, 'RAY_TMPDIR': ray_tmp, 'RAY_ADDRESS': ''}
    try:
        ran = subprocess.run(['ding_lite', 'bench', '--suite', suite, '--seeds', '0-1', '--out', 'out', '--ray',
                              'local', '--storage-path', 'shared'], capture_output=True, text=True, timeout=300,
                             cwd=tmp_path, env=env)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.count(' finished') >= 2
    rows = list(csv.DictReader(open(tmp_path / 'out' / 'results.csv')))
    assert [r['config'] for r in rows] == ['one', 'two'] and all(len(r['final'].split()) == 2 for r in rows)
    assert sorted(os.listdir(tmp_path / 'out')) == ['curves.png', 'profile.png', 'results.csv', 'results.md']
    record = json.load(open(tmp_path / 'shared' / 'one' / 'bench.json'))  # the runs in the storage path
    assert len(record['nodes']) == 1 and record['nodes'][0] != 'local'  # a Ray node's id
    assert (tmp_path / 'shared' / 'two' / 'two_seed1' / 'ckpt' / 'latest').is_file()


@pytest.mark.parametrize('sig', [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)])  # one handler
def test_a_suite_on_ray_told_to_stop_keeps_resume_points_says_so_and_its_command_continues_the_whole_run(tmp_path,
                                                                                                         sig):
    """SIGTERM (a scheduler's) or Ctrl-C to ``bench --ray``: the task stops at its next learn step with a resume
    point no older than its last evaluation, the driver says what was kept and prints the command, which continues
    the run; the row's wall time adds up both tries."""
    pytest.importorskip('ray')
    config = _config(tmp_path, 'long', learn=dict(batch_size=16, learner=dict(hook=dict(save_ckpt_after_iter=0))))
    command = ['ding_lite', 'bench', '-c', config, '--max-env-step', '100000', '--seeds', '0', '--out', 'out',
               '--ray', 'local']
    ray_tmp = tempfile.mkdtemp(prefix='ding_lite_bench_')
    env = {**os.environ, 'RAY_TMPDIR': ray_tmp, 'RAY_ADDRESS': ''}
    evaluations = tmp_path / 'out' / 'long' / 'long_seed0' / 'log' / 'evaluator.csv'
    try:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=env)
        deadline = time.time() + 120
        while (not evaluations.exists() or len(evaluations.read_text().splitlines()) < 4) and time.time() < deadline:
            time.sleep(0.2)
        process.send_signal(sig)
        out, err = process.communicate(timeout=120)
        assert process.returncode == 130, err[-2000:]
        kept = next(line for line in out.splitlines() if line.startswith('  long: resume points kept'))
        step = int(kept.split('at env step ')[1].rstrip(')'))
        assert step >= int(evaluations.read_text().splitlines()[-1].split(',')[1])  # no older than the last eval
        hint = out.split('bench interrupted: continue it with: ')[1].splitlines()[0]
        assert hint == f"{shlex.join(command)} (finished configs are skipped, the others resume)"
        first = json.load(open(tmp_path / 'out' / 'long' / 'tries.json'))[0]['wall_s']
        again = shlex.split(hint.split(' (')[0])
        again[again.index('100000')] = str(step + 400)  # a budget just past the resume point: a short second try
        ran = subprocess.run(again, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert ran.returncode == 0 and 'continuing from its resume points' in ran.stdout, ran.stderr[-2000:]
    tries = json.load(open(tmp_path / 'out' / 'long' / 'tries.json'))
    row = next(csv.DictReader(open(tmp_path / 'out' / 'results.csv')))
    assert len(tries) == 2 and float(row['wall_s']) == pytest.approx(first + tries[1]['wall_s'], abs=1)
    assert float(row['env_steps_per_s']) == pytest.approx((step + 400) / (first + tries[1]['wall_s']), rel=0.2)


def test_ray_with_no_cluster_to_join_says_how_to_start_one(tmp_path):
    config = _config(tmp_path, 'one')
    ran = subprocess.run(['ding_lite', 'bench', '-c', config, '--max-env-step', '60', '--ray'], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path, env={**os.environ, 'RAY_ADDRESS': ''})
    assert ran.returncode != 0 and "ray start --head" in ran.stderr and '--ray local' in ran.stderr


@pytest.mark.parametrize('suite', ['pendulum_family', 'box2d', 'mujoco'])
def test_the_zoos_suites_name_configs_that_compile(suite):
    from entry.tools.bench import _check, load_suite
    from tests.conftest import ROOT
    entries = load_suite(os.path.join(ROOT, 'dizoo_configs', 'suites', f'{suite}.py'))
    assert entries and all(os.path.isfile(e.config) and e.max_env_step > 0 for e in entries)
    assert set(_check(entries, [0])) == {e.name for e in entries}
