"""Hyperparameter search (issue 41): trials as rows of one stacked update, each with its own hyperparameters."""
from __future__ import annotations

import copy
import csv
import pprint
import shlex
import signal
import subprocess
import time

import pytest
import torch

from ding_lite.config import ConfigError, compile_config, read_config
from entry.pipeline import tune as tune_module
from entry.pipeline.seed_axis import SeedAxis
from policy_zoo import create_policy
from tests.conftest import TINY_CREATE, TINY_PENDULUM
from tests.entry.pipeline.test_seeds import _batch, _learn_tensors

TRIAL = dict(learning_rate_q=1e-3, learning_rate_policy=1e-4, learning_rate_alpha=3e-3, discount_factor=0.9,
             target_theta=0.05, alpha=0.5, target_entropy=-0.5)


def _policy(policy_type: str, model=None, **learn):
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=3, action_shape=2, actor_head_hidden_size=16, critic_head_hidden_size=16),
        learn={'batch_size': _batch_size(policy_type), **learn}))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type=policy_type)), save_cfg=False).policy
    return create_policy(cfg, model=model)


def _batch_size(policy_type: str) -> int:
    return 32 if policy_type == 'crossq' else 8  # CrossQ's batch norm at 8: see test_seeds


@pytest.mark.parametrize('policy_type', ['sac', 'discrete_sac', 'crossq', 'tqc', 'redq', 'sac_v1'])
def test_a_stacked_rows_update_equals_its_own_hyperparameters_update(policy_type):
    """Row k of a stacked update with rows of different learning rates, gamma, tau, alpha and target entropy
    equals a single policy of row k's settings over 3 updates on the same batches: every tensor."""
    singles, rows = [], []
    for k, learn in enumerate((TRIAL, {})):
        torch.manual_seed(k)
        singles.append(_policy(policy_type, **learn))
        rows.append(_policy(policy_type, model=copy.deepcopy(singles[-1].model), **learn))
    axis = SeedAxis(rows, randomness='same')
    discrete = policy_type == 'discrete_sac'
    for step in range(3):
        batches = [_batch(discrete, _batch_size(policy_type)) for _ in range(2)]
        torch.manual_seed(step)
        axis.forward(batches)
        for k in range(2):
            torch.manual_seed(step)
            singles[k]._forward_learn(batches[k])
    for k in range(2):
        single, stacked = _learn_tensors(singles[k]), _learn_tensors(rows[k])
        for name in single:
            torch.testing.assert_close(stacked[name], single[name], rtol=1e-4, atol=1e-6, msg=name)
    assert float(rows[0]._alpha.value) != float(rows[1]._alpha.value)


def test_rows_apart_in_anything_else_do_not_stack():
    with pytest.raises(ValueError, match=r"differ in policy\.learn\.batch_size \(rows may set apart only"):
        SeedAxis([_policy('sac'), _policy('sac', batch_size=16)])


def test_simba_v2_rows_stack_their_seeds_but_not_apart_learning_rates(tmp_path):
    """SimbaV2 sets its rates each step (its schedule), from one start: rows apart in them run one after another,
    said before any trial; rows apart in gamma only still stack."""
    def rows(**learn):
        main = dict(exp_name='unused', policy=dict(model=dict(obs_shape=3, action_shape=2, actor_hidden_dim=8,
                                                              critic_hidden_dim=8, num_bins=11),
                                                   learn=dict(batch_size=8, **learn)))
        return create_policy(compile_config(main, create_cfg=dict(policy=dict(type='simba_v2')), save_cfg=False).policy)
    with pytest.raises(ValueError, match=r"SimbaV2Policy sets its learning rates each step.*learning_rate_q"):
        SeedAxis([rows(), rows(learning_rate_q=3e-4)])
    SeedAxis([rows(), rows(discount_factor=0.9)]).forward([_batch(False), _batch(False)])
    main, create = copy.deepcopy(TINY_PENDULUM), copy.deepcopy(TINY_CREATE)
    create['policy']['type'] = 'simba_v2'
    main['exp_name'] = str(tmp_path / 'why')
    main['policy']['model'] = dict(actor_hidden_dim=8, critic_hidden_dim=8, num_bins=11)
    why = tune_module._why_one_at_a_time(main, create, 0, {'learning_rate': ['loguniform', 1e-5, 1e-3]})
    assert why.startswith('SimbaV2Policy sets its learning rates each step')
    gammas = {'policy.learn.discount_factor': ['categorical', [0.9, 0.99]]}
    assert tune_module._why_one_at_a_time(main, create, 0, gammas) is None


def _config_file(tmp_path) -> str:
    main = copy.deepcopy(TINY_PENDULUM)
    main['exp_name'] = 'tiny'
    main['policy']['eval']['evaluator']['eval_freq'] = 20
    path = tmp_path / 'tiny_config.py'
    path.write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(TINY_CREATE)}\n")
    return str(path)


def _rows(csv_path) -> list[dict]:
    return list(csv.DictReader(open(csv_path)))


def test_a_pruned_row_leaves_the_stack_and_the_others_continue(tmp_path, monkeypatch):
    optuna = pytest.importorskip('optuna')
    monkeypatch.chdir(tmp_path)
    main, create = read_config(_config_file(tmp_path))
    study = optuna.create_study(direction='maximize')
    trials = [study.ask() for _ in range(2)]
    reports = []
    monkeypatch.setattr(trials[0], 'should_prune', lambda: len(trials[0].storage.get_trial(
        trials[0]._trial_id).intermediate_values) >= 2)           # pruned at its second evaluation
    monkeypatch.setattr(trials[1], 'report', lambda value, step: reports.append(step))
    tune_module._run_group(study, optuna, trials, (main, create), 'tiny_tune', tune_module.DEFAULT_SPACE, 0,
                           400)
    pruned, kept = (_rows(tmp_path / 'tiny_tune' / f'trial_{k}' / 'log' / 'evaluator.csv') for k in (0, 1))
    assert len(pruned) == 2 and int(pruned[-1]['envstep']) < 400  # its run ended at the pruning evaluation
    assert len(kept) > 3 and reports == [int(r['envstep']) for r in kept]   # it evaluated on, alone
    assert [t.state.name for t in study.trials] == ['PRUNED', 'COMPLETE']
    assert 'pruned by the search' in (tmp_path / 'tiny_tune' / 'trial_0' / 'log' / 'evaluator.txt').read_text()


def test_curve_score_is_the_area_under_the_curve_over_the_budget():
    assert tune_module.curve_score([(0, -1000.0), (100, -500.0), (300, -200.0)], 400) == \
        pytest.approx((-750 * 100 - 350 * 200 - 200 * 100) / 400)  # the last return holds from 300 to the end
    assert tune_module.curve_score([(0, -1000.0), (100, -200.0)], 400) == pytest.approx((-60000 - 200 * 300) / 400)


def test_the_evaluation_at_the_budgets_end_counts_in_the_score():
    """Two trials alike but for their last evaluation, at the budget's end: the better one scores higher (the
    last evaluation had no weight, so such trials tied at short budgets)."""
    early = [(0, -1200.0), (200, -900.0)]
    assert tune_module.curve_score(early + [(400, -300.0)], 400) > tune_module.curve_score(early + [(400, -800.0)], 400)


def test_trials_within_the_evaluation_noise_are_called_indistinguishable():
    from types import SimpleNamespace as Trial
    alike = [Trial(value=v, user_attrs={'eval_error': 30.0}) for v in (-1210.0, -1180.0, -1230.0)]
    assert 'spread 50.0, within the evaluations\' noise (standard error 30.0' in \
        tune_module.indistinguishable(alike, 5000)
    apart = alike + [Trial(value=-400.0, user_attrs={'eval_error': 30.0})]
    assert tune_module.indistinguishable(apart, 5000) is None
    assert tune_module.indistinguishable([Trial(value=-1.0, user_attrs={})] * 3, 5000) is None  # no noise known


def test_tune_through_the_cli_stacks_writes_the_best_config_and_resumes_after_ctrl_c(tmp_path):
    pytest.importorskip('optuna')
    command = ['ding_lite', 'tune', '-c', _config_file(tmp_path), '--max-env-step', '600', '--n-trials', '4',
               '--stack', '2', '--storage', 'sqlite:///search.db']
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    deadline = time.time() + 120
    while not (tmp_path / 'tiny_tune' / 'trial_1' / 'log' / 'evaluator.csv').is_file() and time.time() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-2000:]
    assert f"continue it with: {shlex.join(command)} (the search's trials are in its storage)" in out + err
    assert not (tmp_path / 'tiny_tune' / 'best_config.py').exists()
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    import optuna
    study = optuna.load_study(study_name='tiny_tune', storage=f'sqlite:///{tmp_path / "search.db"}')
    states = [(t.state.name, t.user_attrs.get('interrupted', False)) for t in study.trials]
    assert states[:2] == [('FAIL', True)] * 2                      # the two stopped trials, asked again after
    assert [t.params for t in study.trials[:2]] == [t.params for t in study.trials[2:4]]
    assert sum(s in ('COMPLETE', 'PRUNED') for s, _ in states) == 4
    best = study.best_trial
    assert f"best: trial {best.number}" in run.stdout and 'importances:' in run.stdout
    # 600 env steps: every trial near random, within the evaluations' noise
    assert '600 env steps cannot tell these trials apart' in run.stdout and '--max-env-step 2400' in run.stdout
    main, _ = read_config(str(tmp_path / 'tiny_tune' / 'best_config.py'))
    assert main.policy.learn.learning_rate_q == best.params['learning_rate'] == main.policy.learn.learning_rate_alpha
    assert main.policy.learn.discount_factor == best.params['policy.learn.discount_factor']
    for trial in study.trials[2:]:                                 # each trial's run kept its own settings
        cfg, _ = read_config(str(tmp_path / 'tiny_tune' / f'trial_{trial.number}' / 'total_config.py'))
        assert cfg.policy.learn.target_theta == trial.params['policy.learn.target_theta']


def test_a_bad_search_space_is_refused_before_any_trial(tmp_path):
    pytest.importorskip('optuna')
    space = tmp_path / 'space.json'
    space.write_text('{"policy.learn.learning_rate_k": ["loguniform", 1e-4, 1e-2]}')
    command = ['ding_lite', 'tune', '-c', _config_file(tmp_path), '--max-env-step', '100', '--space', str(space)]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and 'ding_lite: error: ConfigError:' in run.stderr and 'learning_rate_k' in run.stderr
    assert not (tmp_path / 'tiny_tune').exists()
    space.write_text('{"policy.learn.batch_size": ["int", 64, 16]}')
    with pytest.raises(ConfigError, match='low 64 must be below high 16'):
        tune_module.load_space(str(space))
    with pytest.raises(ConfigError, match=r"expected \['loguniform', low, high\]"):
        tune_module.check_space({'policy.learn.alpha': ['normal', 0.1, 0.2]})


def test_a_failing_row_fails_alone_and_its_stack_mates_finish(tmp_path, monkeypatch):
    """A run that raises in one row (a NaN at a large learning rate) ends the stacked run: its trials run again one
    by one, so that only the failing trial fails."""
    optuna = pytest.importorskip('optuna')
    monkeypatch.chdir(tmp_path)
    main, create = read_config(_config_file(tmp_path))
    study = optuna.create_study(direction='maximize')
    trials = [study.ask() for _ in range(3)]
    original = tune_module.train_rows

    def train_rows(rows, *args, **kwargs):
        if any(row[0][0].exp_name.endswith('trial_1') for row in rows):
            raise FloatingPointError('a NaN in trial 1')
        return original(rows, *args, **kwargs)
    monkeypatch.setattr(tune_module, 'train_rows', train_rows)
    tune_module._run_group(study, optuna, trials, (main, create), 'tiny_tune', tune_module.DEFAULT_SPACE, 0, 100)
    assert [t.state.name for t in study.trials] == ['COMPLETE', 'FAIL', 'COMPLETE']


def test_a_configs_tune_section_is_the_searchs_space_and_training_keeps_it_aside(tmp_path, monkeypatch):
    optuna = pytest.importorskip('optuna')
    monkeypatch.chdir(tmp_path)
    main, create = read_config(_config_file(tmp_path))
    main.tune = dict(space={'policy.learn.alpha': ['uniform', 0.1, 0.3]})
    assert compile_config((main, create), save_cfg=False).tune.space == main.tune.space    # a serial run accepts it
    main.tune = dict(spaces={})
    with pytest.raises(ConfigError, match='the top-level tune section must be dict'):
        compile_config((main, create), save_cfg=False)
    main.tune = dict(space={'policy.learn.alpha': ['uniform', 0.1, 0.3]})
    study = tune_module.tune((main, create), max_env_step=60, n_trials=1, stack=1)
    assert list(study.trials[0].params) == ['policy.learn.alpha'] and isinstance(study, optuna.Study)
    best, _ = read_config(str(tmp_path / 'tiny_tune' / 'best_config.py'))
    assert 'tune' not in best and best.policy.learn.alpha == study.trials[0].params['policy.learn.alpha']


def test_tune_with_ray_runs_its_stacked_groups_as_tasks_sharing_the_study(tmp_path):
    pytest.importorskip('optuna')
    pytest.importorskip('ray')
    import os
    import shutil
    import tempfile
    ray_tmp = tempfile.mkdtemp(prefix='ding_lite_tune_')  # a short path: Ray's sockets need one
    command = ['ding_lite', 'tune', '-c', _config_file(tmp_path), '--max-env-step', '300', '--n-trials', '4',
               '--stack', '2', '--storage', 'search.journal', '--ray', 'local']  # a journal file, as nodes share
    try:
        run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env={**os.environ, 'RAY_TMPDIR': ray_tmp, 'RAY_ADDRESS': ''})
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-2000:]
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    study = optuna.load_study(study_name='tiny_tune',
                              storage=JournalStorage(JournalFileBackend(str(tmp_path / 'search.journal'))))
    done = [t for t in study.trials if t.state.name == 'COMPLETE']
    assert len(done) == 4 and all(t.user_attrs.get('worker') for t in done)  # each ran in a Ray task, none extra
    assert len({t.user_attrs['worker'] for t in done}) == 2 and (tmp_path / 'tiny_tune' / 'best_config.py').exists()
    assert len({tuple(sorted(t.params.items())) for t in done}) == 4  # the two tasks never drew one trial twice
    more = subprocess.run(command[:command.index('--n-trials') + 1] + ['6', '--stack', '2', '--storage',
                          'search.journal'], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert more.returncode == 0, more.stderr[-2000:]  # the search continued (the docs' way): two trials more, new ones
    study = optuna.load_study(study_name='tiny_tune',
                              storage=JournalStorage(JournalFileBackend(str(tmp_path / 'search.journal'))))
    done = [t for t in study.trials if t.state.name == 'COMPLETE']
    assert len(done) == 6 and len({tuple(sorted(t.params.items())) for t in done}) == 6
    refused = subprocess.run(command[:-4] + ['--ray', 'local'], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode != 0 and 'shares the study' in refused.stderr and '--storage' in refused.stderr
