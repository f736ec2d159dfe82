from __future__ import annotations

import pprint
import subprocess

import pytest

from entry.cli import build_parser, main
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _write_cfg(tmp_path):
    main_cfg = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'cli_exp'))
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {pprint.pformat(main_cfg)}\ncreate_config = {pprint.pformat(TINY_CREATE)}\n")
    return path


def test_console_script_serial_then_eval(tmp_path):
    path = _write_cfg(tmp_path)
    run = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '-s', '0', '--max-env-step', '120'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert 'finished' in run.stdout and 'checkpoints:' in run.stdout
    ckpt = tmp_path / 'cli_exp' / 'ckpt' / 'ckpt_best.pth.tar'
    assert ckpt.is_file()
    run = subprocess.run(['ding_lite', '-m', 'eval', '-c', str(path), '--load-path', str(ckpt)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert 'return mean' in run.stdout


def test_max_train_iter_flag(tmp_path):
    path = _write_cfg(tmp_path)
    assert main(['-m', 'serial', '-c', str(path), '--max-train-iter', '3']) == 0
    from ding_lite.utils import load_file
    assert load_file(str(tmp_path / 'cli_exp' / 'ckpt' / 'ckpt_last.pth.tar'))['last_iter'] == 3  # stopped there


@pytest.mark.parametrize('argv, message', [
    (['-m', 'seriall', '-c', 'x.py'], "invalid choice: 'seriall'"),
    (['-m', 'serial'], 'the following arguments are required: -c/--config'),
    (['-m', 'serial', '-c', 'x.py', '--max-env-step', 'lots'], "expected a positive integer, got 'lots'"),
])
def test_bad_flags_are_argparse_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_missing_config_file_is_one_clear_line(tmp_path, capsys):
    assert main(['-m', 'serial', '-c', str(tmp_path / 'nope.py')]) == 1
    err = capsys.readouterr().err
    assert err.startswith('ding_lite: error: FileNotFoundError: config file not found') and 'Traceback' not in err
    assert main(['-m', 'serial', '-c', str(tmp_path / 'nope.py'), '--debug']) == 1
    assert 'Traceback' in capsys.readouterr().err


def test_run_folders_follow_the_seed_and_exp_name_overrides(tmp_path, monkeypatch):
    """``<name>_seed<K>`` becomes ``<name>_seed<N>`` for ``-s N``; another name stays; an existing folder is never
    written into (a time suffix); ``--exp-name`` names the folder."""
    main_cfg = dict(TINY_PENDULUM, exp_name='tiny_seed0')
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {pprint.pformat(main_cfg)}\ncreate_config = {pprint.pformat(TINY_CREATE)}\n")
    monkeypatch.chdir(tmp_path)
    for seed in (1, 2, 1):
        assert main(['-m', 'serial', '-c', str(path), '-s', str(seed), '--max-env-step', '60']) == 0
    folders = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert len(folders) == 3 and folders[0] == 'tiny_seed1' and folders[1].startswith('tiny_seed1_')
    assert folders[2] == 'tiny_seed2'
    assert main(['-m', 'serial', '-c', str(path), '-s', '2', '--resume', '--max-env-step', '90']) == 0  # its folder
    assert (tmp_path / 'tiny_seed2' / 'ckpt' / 'latest').is_file() and len(list(tmp_path.iterdir())) == 4
    assert main(['-m', 'serial', '-c', str(path), '-s', '4', '--exp-name', 'mine', '--max-env-step', '60']) == 0
    assert (tmp_path / 'mine' / 'log' / 'evaluator.csv').is_file() and not (tmp_path / 'tiny_seed4').exists()


def test_eval_episodes_and_replay_videos(tmp_path, capsys):
    """``--episodes N`` runs N episodes and prints mean, std, min and max; ``--replay-path`` writes one mp4 per
    episode under ``env<i>/``."""
    pytest.importorskip('moviepy', reason="recording videos needs moviepy: pip install 'ding-lite[video]'")
    from tests.conftest import untrained_checkpoint
    path = _write_cfg(tmp_path)
    ckpt = untrained_checkpoint((dict(TINY_PENDULUM, exp_name=str(tmp_path / 'x')), TINY_CREATE), tmp_path / 'w.pt')
    assert main(['-m', 'eval', '-c', str(path), '--load-path', ckpt, '--episodes', '3',
                 '--replay-path', str(tmp_path / 'videos')]) == 0
    out = capsys.readouterr().out
    assert 'eval over 3 episodes: return mean' in out and ' std ' in out and '(min ' in out and ', max ' in out
    videos = sorted(p.relative_to(tmp_path / 'videos').as_posix() for p in (tmp_path / 'videos').rglob('*.mp4'))
    assert len(videos) == 3 and {v.split('/')[0] for v in videos} == {'env0', 'env1'}
    assert all((tmp_path / 'videos' / v).stat().st_size > 1000 for v in videos)


def test_replay_without_moviepy_and_eval_flags_elsewhere_are_clear(tmp_path, capsys, monkeypatch):
    import gymnasium as gym
    from envs import PendulumEnv

    def missing(*args, **kwargs):
        raise gym.error.DependencyNotInstalled('MoviePy is not installed, run `pip install "gymnasium[other]"`')

    monkeypatch.setattr(gym.wrappers, 'RecordVideo', missing)
    env = PendulumEnv({})
    with pytest.raises(ImportError, match=r"recording videos of 'Pendulum-v1' needs MoviePy: pip install "
                                          r"'ding-lite\[video\]'"):
        env.enable_save_replay(str(tmp_path / 'v'))
    env.close()
    with pytest.raises(SystemExit):
        main(['-m', 'serial', '-c', 'x.py', '--episodes', '3'])
    assert '--episodes and --replay-path are for -m eval, not -m serial' in capsys.readouterr().err
