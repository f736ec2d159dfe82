"""Crossq as a user runs it: the tests of ``tests.policy_zoo.test_crossq`` that train or load through ``entry`` (the
core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import csv
import subprocess

import numpy as np
import torch

from entry import load_policy
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def test_eval_of_a_crossq_run_reproduces_its_best_evaluation_and_predict_and_export_agree(tmp_path):
    """Through the CLI: a short run (BatchRenorm past its warm-up), then ``-m eval`` of its ``ckpt_best`` gives
    the best evaluation's return; ``load_policy``'s predict and the exported actor act on the running statistics
    (a row's action does not depend on the rows beside it)."""
    main = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'run'))
    main['policy'] = dict(main['policy'], model=dict(main['policy']['model'], batch_renorm=dict(warmup_steps=30)))
    config = tmp_path / 'cfg.py'
    config.write_text(f"main_config = {main!r}\ncreate_config = {dict(TINY_CREATE, policy=dict(type='crossq'))!r}\n")
    run = lambda *args: subprocess.run(['ding_lite', *args], capture_output=True, text=True, cwd=tmp_path,  # noqa
                                       timeout=300)
    trained = run('-m', 'serial', '-c', str(config), '-s', '0', '--max-env-step', '240')
    assert trained.returncode == 0, trained.stderr[-2000:]
    best = max(float(row['return_mean']) for row in csv.DictReader(open(tmp_path / 'run' / 'log' / 'evaluator.csv')))
    evaluated = run('-m', 'eval', '-c', str(tmp_path / 'run' / 'total_config.py'), '--load-path',
                    str(tmp_path / 'run' / 'ckpt' / 'ckpt_best.pth.tar'))
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    assert f"return mean {best:.2f} " in evaluated.stdout
    agent = load_policy(str(tmp_path / 'run'))
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    assert np.allclose(agent.predict(obs)[:1], agent.predict(obs[0]))
    exported = torch.jit.load(agent.export(str(tmp_path / 'actor.pt')))
    assert np.allclose(exported(torch.as_tensor(obs)).numpy(), agent.predict(obs), atol=1e-6)
