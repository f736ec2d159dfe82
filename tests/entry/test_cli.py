from __future__ import annotations

import os
import pprint
import subprocess
import sys
import warnings

import pytest

from entry.cli import build_parser, main
from tests.conftest import ROOT, TINY_CREATE, TINY_PENDULUM


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
    with warnings.catch_warnings(record=True) as caught:  # one episode: env1 runs none, and leaves no folder
        warnings.simplefilter('always')
        assert main(['-m', 'eval', '-c', str(path), '--load-path', ckpt, '--episodes', '1',
                     '--replay-path', str(tmp_path / 'one')]) == 0
    assert sorted(p.name for p in (tmp_path / 'one').iterdir()) == ['env0']
    assert f"videos: {tmp_path / 'one' / 'env0'}\n" in capsys.readouterr().out
    assert not [w for w in caught if 'Unable to save last video' in str(w.message)]
    # a config that renders already (render_mode in env_kwargs, as pixel wrappers need it) records as well
    assert main(['-m', 'eval', '-c', str(path), '--load-path', ckpt, '--episodes', '1', '--replay-path',
                 str(tmp_path / 'rgb'), '--set', "env.env_kwargs={'max_episode_steps': 20, 'render_mode': 'rgb_array'}"]
                ) == 0
    assert len(list((tmp_path / 'rgb').rglob('*.mp4'))) == 1


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


def test_set_overrides_values_records_them_and_a_run_without_a_terminal_prints_lines(tmp_path):
    path = _write_cfg(tmp_path)
    run = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '--max-train-iter', '20',
                          '--set', 'policy.learn.batch_size=8', '--set', 'env.collector_env_num=3',
                          '--set', 'create.env_manager.type=subprocess', '--set', "policy.model.activation='tanh'"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    from ding_lite.config import read_config
    saved = tmp_path / 'cli_exp' / 'total_config.py'
    main_cfg, create_cfg = read_config(str(saved))
    assert main_cfg.policy.learn.batch_size == 8 and main_cfg.env.collector_env_num == 3
    assert main_cfg.policy.model.activation == 'tanh' and create_cfg.env_manager.type == 'subprocess'
    assert "#   --set policy.learn.batch_size=8\n" in saved.read_text()  # recorded, and logged
    assert "overrides (--set): policy.learn.batch_size=8, env.collector_env_num=3" in \
        (tmp_path / 'cli_exp' / 'log' / 'summary.txt').read_text()
    # stderr is a pipe, not a terminal: a plain line per evaluation instead of the bar (eval_freq 10: 0 and 10, and
    # the last weights at the budget's end)
    lines = [line for line in run.stderr.splitlines() if 'env steps/s' in line]
    assert len(lines) == 3 and 'cli_exp: env step ' in lines[0] and ', iteration 10, eval return -' in lines[1]
    assert ', iteration 20, eval return -' in lines[2]
    bad = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '--set', 'policy.learn.bach_size=8'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert bad.returncode == 1 and bad.stderr.strip().splitlines()[-1].startswith(
        "ding_lite: error: ConfigError: unknown config key 'policy.learn.bach_size'; did you mean "
        "'policy.learn.batch_size'?")
    assert sorted(os.listdir(tmp_path)) == ['cfg.py', 'cli_exp']  # the failed run left no folder


def test_overrides_are_checked_as_the_files_keys_are(tmp_path):
    from ding_lite.config import ConfigError, parse_overrides
    from entry import serial_pipeline
    main_cfg = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'api'))
    with pytest.raises(ConfigError, match=r"'policy.learn.batch_size' must be an int, got 'fast'"):
        serial_pipeline((main_cfg, TINY_CREATE), overrides=parse_overrides(['policy.learn.batch_size=fast']))
    with pytest.raises(ConfigError, match=r"unknown create_config key 'create.env.typo'"):
        serial_pipeline((main_cfg, TINY_CREATE), overrides={'create.env.typo': 1})
    with pytest.raises(ConfigError, match=r"--set takes KEY=VALUE"):
        parse_overrides(['policy.learn.batch_size'])
    assert parse_overrides(['a.b=3e-4', 'c=[64, 64]', 'd=Pendulum-v1', 'e=None']) == \
        {'a.b': 3e-4, 'c': [64, 64], 'd': 'Pendulum-v1', 'e': None}
    policy = serial_pipeline((main_cfg, TINY_CREATE), max_train_iter=2, overrides={'policy.learn.batch_size': 8})
    assert policy._cfg.learn.batch_size == 8


def test_help_lists_every_mode_and_tool():
    from entry.cli import MODES, TOOLS
    run = subprocess.run([sys.executable, '-m', 'entry.cli', '--help'], capture_output=True, text=True, timeout=60,
                         cwd=ROOT)
    assert run.returncode == 0
    for name, text in [*MODES.items(), *TOOLS.items()]:
        assert f"{name}  " in run.stdout and text[:40] in ' '.join(run.stdout.split()), name


def test_without_a_terminal_a_line_comes_at_least_once_a_minute(monkeypatch, tmp_path):
    import io
    from easydict import EasyDict
    from entry.kit import life_cycle as run_module
    stream = io.StringIO()  # not a terminal
    progress = run_module.RunProgress(EasyDict(exp_name='quiet'), 100, 10 ** 10, lambda: 7, stream=stream)
    progress.update(50)
    assert stream.getvalue() == ''  # within the minute: nothing yet
    monkeypatch.setattr(run_module, 'LINE_SECONDS', 0.0)
    progress.update(50)
    assert 'quiet: env step 200, iteration 7, eval return -, ' in stream.getvalue()
    progress.close()


def test_a_run_with_no_budget_says_so_once_it_has_gone_on_long(monkeypatch):
    import io
    from easydict import EasyDict
    from entry.kit import life_cycle as run_module
    monkeypatch.setattr(run_module, 'LINE_SECONDS', 0.0)
    cfg = EasyDict(exp_name='endless', env=dict(stop_value=-150))
    lines = {}
    for budget in ('none', 'env steps', 'iterations'):
        stream = io.StringIO()
        progress = run_module.RunProgress(cfg, 0, 500 if budget == 'env steps' else 10 ** 10, lambda: 7,
                                          stream=stream, max_train_iter=50 if budget == 'iterations' else None)
        progress.update(10)
        monkeypatch.setattr(run_module, 'LONG_SECONDS', 0.0)
        progress.update(10)
        monkeypatch.setattr(run_module, 'LONG_SECONDS', 1800.0)
        lines[budget] = stream.getvalue().splitlines()
    assert 'not reached' not in lines['none'][0]  # not yet long
    assert lines['none'][1].endswith('env steps/s; stop value -150 not reached after 0 min and no budget set: '
                                     '--max-env-step N ends it')
    assert not any('not reached' in line for line in lines['env steps'] + lines['iterations'])
    assert ' left' in lines['env steps'][1] and not any('left' in line for line in lines['none'])


def test_the_time_left_is_the_budgets_rest_at_the_speed_so_far(monkeypatch):
    import io
    from easydict import EasyDict
    from entry.kit import life_cycle as run_module
    now = [0.0]
    monkeypatch.setattr(run_module.time, 'monotonic', lambda: now[0])
    monkeypatch.setattr(run_module, 'LINE_SECONDS', 0.0)
    stream = io.StringIO()
    progress = run_module.RunProgress(EasyDict(exp_name='eta'), 1000, 13000, lambda: 0, stream=stream)
    now[0] = 60.0
    progress.update(2000)  # 2000 env steps in a minute: 10000 left, 5 min
    assert stream.getvalue().rstrip().endswith('33 env steps/s, 5 min left'), stream.getvalue()


def test_many_seeds_share_one_progress_line_per_evaluation_round():
    import io
    from types import SimpleNamespace
    from easydict import EasyDict
    from entry.kit.life_cycle import RunProgress
    from entry.pipeline.seeds import _SeedBar
    stream = io.StringIO()  # not a terminal
    progress = RunProgress(EasyDict(exp_name='p_seed0'), 0, 10 ** 10, lambda: 0, stream=stream, name='p (2 seeds)')
    runs = [SimpleNamespace(cfg=EasyDict(seed=k), collector=SimpleNamespace(envstep=0)) for k in (0, 1)]
    returns = {}
    bars = [_SeedBar(progress, run, returns) for run in runs]
    bars[0].set_postfix('-10.0')
    bars[1].set_postfix('-20.0')
    for bar in bars:
        bar.update(8)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and 'p (2 seeds): env step 0, ' in lines[0] and 'seed0 -10.0 seed1 -20.0' in lines[0]
    assert progress.n == 8  # the seeds step alike: the bar counts one seed's env steps


def test_help_and_a_bad_flag_answer_without_loading_torch():
    """``--help`` (of the modes and of a mode) and an argparse error come before anything heavy is imported."""
    probe = ("import sys\nfrom entry.cli import main\n"
             "for argv in (['--help'], ['-m', 'serial', '--help'], ['-m', 'serial', '-c', 'x.py', '--seeds', '0', "
             "'-s', '1']):\n"
             "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
             "print('torch loaded' if 'torch' in sys.modules else 'no torch')\n")
    run = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.stdout.strip().endswith('no torch'), run.stdout[-500:] + run.stderr[-1000:]
    assert 'give either -s/--seed (one run) or --seeds (many), not both' in run.stderr
