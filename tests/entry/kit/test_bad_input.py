"""Bad input, wherever it enters, is one clear error line at the CLI, raised before training, writing nothing."""
from __future__ import annotations

import copy
import os

import pytest
import torch

from entry.cli import main
from tests.conftest import TINY_CREATE, TINY_PENDULUM, synthetic_demo, untrained_checkpoint


def _set(tree: dict, dotted: str, value) -> None:
    *parents, leaf = dotted.split('.')
    for key in parents:
        tree = tree.setdefault(key, {})
    tree[leaf] = value


def _write(tmp_path, name: str, main_changes: dict | None = None, create_changes: dict | None = None) -> str:
    main_cfg, create = copy.deepcopy(TINY_PENDULUM), copy.deepcopy(TINY_CREATE)
    main_cfg['exp_name'] = str(tmp_path / 'existing')
    for key, value in (main_changes or {}).items():
        _set(main_cfg, key, value)
    for key, value in (create_changes or {}).items():
        _set(create, key, value)
    path = tmp_path / f'{name}.py'
    path.write_text(f"main_config = {main_cfg!r}\ncreate_config = {create!r}\n")
    return str(path)


def _files(tmp_path, name: str, kind: str) -> str:
    """Checkpoints and demonstration files, good and bad, for the table."""
    path = tmp_path / name
    if kind == 'truncated':
        good = untrained_checkpoint((TINY_PENDULUM, TINY_CREATE), tmp_path / 'good.pth.tar')
        path.write_bytes(open(good, 'rb').read()[:300])
    elif kind == 'foreign':
        torch.save({'weights': torch.zeros(3)}, path)
    elif kind == 'demo_mismatch':
        synthetic_demo(path, obs_dim=4, env_id='Pendulum-v1')
    return str(path)


CASES = {
    'unknown policy': (dict(), dict(**{'policy.type': 'sacc'}), [], "unknown policy 'sacc'; did you mean 'sac'?"),
    'unknown env': (dict(), dict(**{'env.type': 'pendulumm'}), [], "did you mean 'pendulum'?"),
    'unknown manager': (dict(), dict(**{'env_manager.type': 'subproces'}), [], "did you mean 'subprocess'?"),
    'nested typo': (dict(**{'policy.learn.learning_rate_qq': 1e-3}), {}, [],
                    "unknown config key 'policy.learn.learning_rate_qq'; did you mean 'policy.learn.learning_rate_q'?"),
    'zero batch': (dict(**{'policy.learn.batch_size': 0}), {}, [],
                   "'policy.learn.batch_size' must be a positive number, got 0"),
    'negative buffer': (dict(**{'policy.other.replay_buffer.replay_buffer_size': -5}), {}, [],
                        "'policy.other.replay_buffer.replay_buffer_size' must be a positive number, got -5"),
    'batch over capacity': (dict(**{'policy.learn.batch_size': 2000}), {}, [],
                            "batch_size=2000 is larger than the replay buffer's capacity"),
    'n_sample zero': (dict(**{'policy.collect.n_sample': 0}), {}, [],
                      "'policy.collect.n_sample' must be a positive number, got 0"),
    'discount above 1': (dict(**{'policy.learn.discount_factor': 1.5}), {}, [],
                         "'policy.learn.discount_factor' must be a number in (0, 1], got 1.5"),
    'discount zero': (dict(**{'policy.learn.discount_factor': 0.0}), {}, [], "must be a number in (0, 1], got 0.0"),
    'target_theta zero': (dict(**{'policy.learn.target_theta': 0}), {}, [],
                          "'policy.learn.target_theta' must be a number in (0, 1], got 0"),
    'wrong type': (dict(**{'policy.learn.learning_rate_q': 'fast'}), {}, [],
                   "'policy.learn.learning_rate_q' must be a number, got 'fast'"),
    'obs shape': (dict(**{'policy.model.obs_shape': 5}), {}, [],
                  "policy.model.obs_shape=5 does not match env 'Pendulum-v1', whose observation size is 3"),
    'action shape': (dict(**{'policy.model.action_shape': 2}), {}, [],
                     "policy.model.action_shape=2 does not match env 'Pendulum-v1'"),
    'continuous on discrete': (dict(**{'policy.model.obs_shape': 4}), dict(**{'env.type': 'cartpole'}), [],
                               "policy 'sac' needs continuous (Box) actions, but env 'CartPole-v1' has Discrete(2)"),
    'discrete on continuous': (dict(**{'policy.model': dict(obs_shape=3, action_shape=1)}),
                               dict(**{'policy.type': 'discrete_sac'}), [],
                               "policy 'discrete_sac' needs Discrete actions, but env 'Pendulum-v1' has Box"),
    'missing checkpoint': ({}, {}, ['-m', 'eval', '--load-path', 'FILE:nope.pth.tar:missing'], 'checkpoint not found'),
    'truncated checkpoint': ({}, {}, ['-m', 'eval', '--load-path', 'FILE:cut.pth.tar:truncated'],
                             'is not a readable torch file (truncated or foreign?)'),
    'foreign checkpoint': ({}, {}, ['-m', 'eval', '--load-path', 'FILE:other.pt:foreign'],
                           "is not a ding_lite checkpoint (expected a dict with a 'model' entry)"),
    'nothing to resume': ({}, {}, ['-m', 'serial', '--resume'], 'nothing to resume'),
    'resume a missing file': ({}, {}, ['-m', 'serial', '--resume', 'run/ckpt/iteration_99999.pth.tar'],
                              "nothing to resume: no checkpoint file or run folder "
                              "'run/ckpt/iteration_99999.pth.tar'"),
    'truncated resume': ({}, {}, ['-m', 'serial', '--resume', 'FILE:cut.pth.tar:truncated'],
                         'is not a readable torch file'),
    'missing demonstrations': ({}, {}, ['-m', 'serial_sqil', '--expert-data-path', 'FILE:none.pt:missing'],
                               'demonstration file not found'),
    'mismatched demonstrations': ({}, {}, ['-m', 'serial_sqil', '--expert-data-path', 'FILE:demo.pt:demo_mismatch'],
                                  "has observations of shape [4], but policy.model.obs_shape is 3"),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_bad_input_is_one_clear_line_and_writes_nothing(tmp_path, capsys, case):
    main_changes, create_changes, argv, message = CASES[case]
    existing = tmp_path / 'existing'
    existing.mkdir()
    (existing / 'evaluator.csv').write_text('train_iter\n0\n')
    cfg = _write(tmp_path, 'cfg', main_changes, create_changes)
    argv = [_files(tmp_path, *a[5:].split(':')) if a.startswith('FILE:') else a for a in argv]
    before = sorted(os.listdir(tmp_path)), sorted(os.listdir(existing))
    assert main([*(argv[:2] or ['-m', 'serial']), '-c', cfg, *argv[2:], '--max-env-step', '100']) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith('ding_lite: error:')]
    assert len(errors) == 1 and message in errors[0] and 'Traceback' not in err, err
    after = sorted(name for name in os.listdir(tmp_path) if not name.endswith(('.pth.tar', '.pt'))), \
        sorted(os.listdir(existing))
    assert after == (sorted(n for n in before[0] if not n.endswith(('.pth.tar', '.pt'))), before[1])


@pytest.mark.parametrize('source, message', [
    ('main_config = dict(\n', 'failed to import (line 1): SyntaxError'),
    ('import not_a_module_anywhere\n', "failed to import (line 1): ModuleNotFoundError: No module named"),
    ('x = 1\nmain_config = undefined_name\n', 'failed to import (line 2): NameError'),
    ('main_config = {}\n', 'does not define create_config'),
])
def test_a_config_file_that_fails_to_import(tmp_path, capsys, source, message):
    path = tmp_path / 'broken.py'
    path.write_text(source)
    assert main(['-m', 'serial', '-c', str(path)]) == 1
    err = capsys.readouterr().err
    assert message in err and 'Traceback' not in err and os.listdir(tmp_path) == ['broken.py']


@pytest.mark.parametrize('argv, message', [
    (['-m', 'train'], "invalid choice: 'train'"),
    (['-m', 'serial', '--seeed', '1'], 'unrecognized arguments: --seeed'),
    (['-m', 'eval', '--resume'], '--resume continues a training run'),
])
def test_unknown_cli_modes_and_flags(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        main([*argv, '-c', _write(tmp_path, 'cfg')])
    assert info.value.code == 2 and message in capsys.readouterr().err
