"""Combinations that used to be silently wrong, as a user would meet them (test_compose.py sweeps the rest)."""
from __future__ import annotations

import copy
import os
import shlex
import subprocess
import sys

import pytest
import torch
from easydict import EasyDict

from ding_lite.utils import load_file
from entry import serial_pipeline, serial_pipeline_offline
from policy_zoo import SACPolicy
from tests.conftest import ROOT, TINY_CREATE, TINY_PENDULUM, pendulum_expert_demo
from tests.entry.pipeline.test_resume import _crash_at


def _cfg(exp_dir, **policy) -> tuple[EasyDict, EasyDict]:
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(exp_dir)
    main.policy.learn.learner.hook.save_ckpt_after_iter = 7
    main.policy.update(policy)
    return main, EasyDict(copy.deepcopy(TINY_CREATE))


@pytest.mark.parametrize('load', ['whole', 'actor'])
def test_a_resumed_fine_tuning_run_continues_its_own_weights_not_the_pretrained_file(tmp_path, monkeypatch, load):
    serial_pipeline(_cfg(tmp_path / 'pretrained'), seed=1, max_train_iter=5)
    ckpt = str(tmp_path / 'pretrained' / 'ckpt' / 'ckpt_last.pth.tar')
    hook = dict(load_ckpt_before_run=ckpt if load == 'whole' else f'actor@{ckpt}')

    def tuned(name):
        main, create = _cfg(tmp_path / name)
        main.policy.learn.learner.hook.update(hook)
        return main, create
    serial_pipeline(tuned('straight'), seed=0, max_train_iter=20)
    with monkeypatch.context() as patch:
        _crash_at(patch, 10)  # after iteration_7's resume point
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline(tuned('resumed'), seed=0, max_train_iter=20)
    serial_pipeline(tuned('resumed'), seed=0, max_train_iter=20, resume=True)
    final, straight = (load_file(str(tmp_path / name / 'ckpt' / 'ckpt_last.pth.tar')) for name in ('resumed',
                                                                                                     'straight'))
    assert final['last_iter'] == straight['last_iter'] == 20
    for key in ('model', 'target_model'):
        assert all(torch.equal(final[key][k], v) for k, v in straight[key].items()), key
    summary = (tmp_path / 'resumed' / 'log' / 'summary.txt').read_text()
    assert 'applied when the run began' in summary and 'continues its own weights' in summary


def test_offline_fits_its_normalisers_on_the_data_clips_its_rewards_and_writes_priorities(tmp_path):
    data = pendulum_expert_demo(tmp_path / 'demo.pt', n=400)
    main, create = _cfg(tmp_path / 'offline', priority=True)
    main.env.update(norm_obs=dict(use_norm=True), norm_reward=dict(use_norm=True), reward_clip=[-5.0, 0.0])
    main.policy.learn.data_path = data
    policy = serial_pipeline_offline((main, create), seed=0, max_train_iter=10)
    obs = load_file(data)['data']['obs'].double()
    norm = policy.model.obs_norm
    assert norm.count.item() == 400 and torch.allclose(norm.mean, obs.mean(0))  # fitted once, on the data
    assert policy.model.reward_norm.count.item() == 400
    saved = load_file(str(tmp_path / 'offline' / 'ckpt' / 'ckpt_last.buffer.pth.tar'))['offline_data']
    assert saved['data'][('reward',)].min() >= -5.0                              # clipped as stored data is
    assert not torch.all(saved['extra']['priority'] == 1.0)                      # the learn steps wrote priorities


def test_a_search_trains_its_reward_models_on_their_own_schedule(tmp_path):
    from entry import tune
    main, create = _cfg(tmp_path / 'search_seed0', reward_signals=dict(extrinsic=dict(), rnd=dict(encoding_size=8)))
    main.policy.learn.reward_signal_steps_per_update = 2
    tune((main, create), max_env_step=80, n_trials=1, stack=1, pruner='none')
    log = (tmp_path / 'search_tune' / 'trial_0' / 'log' / 'learner.txt').read_text()
    assert 'reward_signal/rnd/loss' in log  # its own steps ran (none, and the loss was never logged)


def test_new_reward_weights_reach_the_overlapped_collectors_returns(tmp_path):
    from ding_lite.config import compile_config
    from entry.kit.life_cycle import PhaseTimer
    from entry.kit.steps import build_serial, collect_round
    from tests.conftest import zoo_config
    main, create = zoo_config('pendulum_split_sac_config', tmp_path / 'split')
    main.env.update(collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=1,
                    env_kwargs=dict(max_episode_steps=10))
    main.policy.update(random_collect_size=0, collect=dict(n_sample=10, overlap=True))
    cfg = compile_config(main, create)
    run = build_serial(cfg)
    run.timer = PhaseTimer(0, 0)
    try:
        collect_round(cfg, run, None, None)           # here; then the child forks and collects the next round
        run.policy.set_reward_weights([0.0, 0.0, 1.0])  # the torque cost alone, from the round after that
        collect_round(cfg, run, None, None)
        collect_round(cfg, run, None, None)
        episode = run.collector.finished_episodes[-1]  # one episode per round
        assert episode['return'] == pytest.approx(episode['return_2'], rel=1e-5) and episode['return_0'] != 0
    finally:
        for closable in run.closables:
            closable.close()


def test_init_w_applies_to_a_model_given_to_create_policy(tmp_path):
    from ding_lite.config import compile_config
    from policy_zoo import create_policy
    main, create = _cfg(tmp_path / 'init')
    main.policy.learn.init_w = 1e-6
    cfg = compile_config(main, create, save_cfg=False)
    model = SACPolicy.create_model(EasyDict(model=cfg.policy.model))  # built without the policy's init
    assert model.actor[-1].mu.weight.abs().max() > 1e-6
    policy = create_policy(cfg.policy, model=model)
    assert policy.model.actor[-1].mu.weight.abs().max() <= 1e-6


SCRIPT = '''
from policy_zoo import SACPolicy
from ding_lite import POLICY_REGISTRY, load_policy, serial_pipeline


@POLICY_REGISTRY.register('unguarded_sac')
class UnguardedSACPolicy(SACPolicy):
    pass


main_config = {main}
create_config = {create}
serial_pipeline((main_config, create_config), seed=0, max_train_iter=4)
load_policy('unguarded_seed0')  # in the same process: the script is not imported again
'''


def test_reloading_a_run_of_an_unguarded_script_never_trains_again(tmp_path):
    main = dict(TINY_PENDULUM, exp_name='unguarded_seed0')
    create = dict(TINY_CREATE, policy=dict(type='unguarded_sac'))
    (tmp_path / 'train.py').write_text(SCRIPT.format(main=repr(main), create=repr(create)))
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    run = subprocess.run([sys.executable, '-W', 'ignore', 'train.py'], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env={**env, 'PYTHONPATH': ROOT})
    assert run.returncode == 0 and (tmp_path / 'unguarded_seed0').is_dir(), run.stderr[-3000:]
    code = "from entry import load_policy; print(type(load_policy('unguarded_seed0').policy).__name__)"
    run = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**env, 'PYTHONPATH': ROOT})
    assert run.returncode == 0 and run.stdout.split() == ['UnguardedSACPolicy'], run.stdout + run.stderr[-3000:]
    assert 'trains at its top level (line 13)' in run.stderr
    assert [p.name for p in tmp_path.glob('unguarded_seed0*')] == ['unguarded_seed0']  # no second run


def test_the_printed_resume_command_continues_the_run_that_printed_it(tmp_path):
    """An earlier run holds the config's folder, so the new one writes a timestamped sibling: the command printed on
    Ctrl-C names that sibling, and running it continues it (not the earlier, finished run)."""
    config = tmp_path / 'cfg.py'
    main = dict(TINY_PENDULUM, exp_name='demo_seed0')
    config.write_text(f"main_config = {main!r}\ncreate_config = {TINY_CREATE!r}\n")
    cli = [sys.executable, '-m', 'entry.cli', '-m', 'serial', '-c', str(config), '-s', '0']
    env = {**os.environ, 'PYTHONPATH': ROOT}
    assert subprocess.run([*cli, '--max-train-iter', '5'], cwd=tmp_path, env=env, capture_output=True).returncode == 0
    finished = (tmp_path / 'demo_seed0' / 'log' / 'evaluator.csv').read_text()
    process = subprocess.Popen([*cli, '--max-train-iter', '100000'], cwd=tmp_path, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sibling = None
    while sibling is None or not (sibling / 'log' / 'evaluator.csv').exists():
        sibling = next((p for p in tmp_path.glob('demo_seed0_*')), None)
    process.send_signal(2)
    out = process.communicate(timeout=120)[0]
    hint = next(line for line in out.splitlines() if 'continue it with: ' in line).split('continue it with: ')[1]
    assert hint.endswith(f'--resume {sibling.name}'), hint
    command = shlex.split(hint.replace('--max-train-iter 100000', '--max-train-iter 120'))
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / 'demo_seed0' / 'log' / 'evaluator.csv').read_text() == finished  # the finished run untouched
    assert load_file(str(sibling / 'ckpt' / 'ckpt_last.pth.tar'))['last_iter'] == 120


def test_a_script_read_from_stdin_records_nothing_that_cannot_be_imported(tmp_path):
    main, create = dict(TINY_PENDULUM, exp_name='stdin_seed0'), dict(TINY_CREATE, policy=dict(type='stdin_sac'))
    script = ("from entry import serial_pipeline\nfrom policy_zoo import SACPolicy\nfrom ding_lite import POLICY_REGISTRY"
              "\nPOLICY_REGISTRY.register('stdin_sac', type('StdinSAC', (SACPolicy,), {}))\n"
              f"serial_pipeline(({main!r}, {create!r}), max_train_iter=2)\n")
    run = subprocess.run([sys.executable, '-W', 'ignore', '-'], input=script, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env={**os.environ, 'PYTHONPATH': ROOT})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "'import_names': []" in (tmp_path / 'stdin_seed0' / 'total_config.py').read_text()
