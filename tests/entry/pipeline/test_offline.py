"""``-m offline`` / ``serial_pipeline_offline``: learning from a file with no env step."""
from __future__ import annotations

import copy
import csv
import os
import pprint
import subprocess

import pytest
import torch

from entry import serial_pipeline, serial_pipeline_offline
from tests.conftest import TINY_CREATE, pendulum_expert_demo, synthetic_demo


def _rows(exp_name) -> list[dict]:
    return list(csv.DictReader(open(os.path.join(exp_name, 'log', 'evaluator.csv'))))


def test_offline_makes_no_env_step_evaluates_and_resumes_bitwise(tiny_pendulum, tmp_path):
    main, create = tiny_pendulum
    main.policy.learn.data_path = synthetic_demo(tmp_path / 'demo.pth')
    straight = serial_pipeline_offline((copy.deepcopy(main), create), seed=0, max_train_iter=40)
    rows = _rows(main.exp_name)
    assert [r['train_iter'] for r in rows] == ['0', '10', '20', '30', '40']     # eval_freq, and the end
    assert all(r['envstep'] == '0' for r in rows)
    ckpt = torch.load(os.path.join(main.exp_name, 'ckpt', 'ckpt_last.pth.tar'), weights_only=False)
    assert ckpt['last_iter'] == 40 and ckpt['last_envstep'] == 0 and ckpt['run']['collector']['envstep'] == 0
    main.exp_name = str(tmp_path / 'halves')
    serial_pipeline_offline((copy.deepcopy(main), create), seed=0, max_train_iter=20)
    resumed = serial_pipeline_offline((copy.deepcopy(main), create), seed=0, max_train_iter=40, resume=True)
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name


def test_offline_reads_a_runs_replay_buffer_file_and_refuses_other_files(tiny_pendulum, tmp_path):
    main, create = tiny_pendulum
    main.policy.other.replay_buffer.save_replay_buffer = True
    serial_pipeline((copy.deepcopy(main), create), seed=0, max_env_step=80)
    (buffer_file,) = [f for f in os.listdir(os.path.join(main.exp_name, 'ckpt')) if f.endswith('.buffer.pth.tar')]
    main.policy.learn.data_path = os.path.join(main.exp_name, 'ckpt', buffer_file)
    main.exp_name = str(tmp_path / 'from_buffer')
    serial_pipeline_offline((copy.deepcopy(main), create), seed=0, max_train_iter=5)
    assert _rows(main.exp_name)[-1]['train_iter'] == '5'
    main.policy.learn.data_path = os.path.join(os.path.dirname(main.policy.learn.data_path), 'ckpt_last.pth.tar')
    with pytest.raises(ValueError, match='neither a demonstration file nor a non-empty replay buffer file'):
        serial_pipeline_offline((copy.deepcopy(main), create), seed=0, max_train_iter=5)


def test_offline_cli_is_refused_without_data_and_with_env_steps(tiny_pendulum, tmp_path):
    main, _ = tiny_pendulum
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {pprint.pformat(dict(main))}\ncreate_config = {pprint.pformat(TINY_CREATE)}\n")
    run = subprocess.run(['ding_lite', '-m', 'offline', '-c', str(path), '--max-train-iter', '5'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 1 and 'ding_lite: error: ConfigError: policy.learn.data_path=None' in run.stderr
    run = subprocess.run(['ding_lite', '-m', 'offline', '-c', str(path), '--max-env-step', '5'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 2 and '-m offline makes no env steps' in run.stderr


@pytest.mark.slow
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_offline_sac_learns_pendulum_from_a_controllers_demonstrations(tmp_path, seed):
    """10k transitions of a hand-made swing-up (30% random actions, the rest noisy), the zoo config's SAC, 3000
    learn steps: measured best evaluations -312 / -247 / -218 (seeds 0-2) from -1330 to -1570 at the start."""
    from tests.conftest import zoo_config
    main, create = zoo_config('pendulum_sac_config', tmp_path / 'offline')
    main.policy.learn.data_path = pendulum_expert_demo(tmp_path / 'demo.pth', 10000)
    main.policy.eval.evaluator.eval_freq = 500
    main.env.stop_value = 0
    serial_pipeline_offline((main, create), seed=seed, max_train_iter=3000)
    returns = [float(r['return_mean']) for r in _rows(main.exp_name)]
    assert returns[0] < -1000 and max(returns) >= -600, returns
