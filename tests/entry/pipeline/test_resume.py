"""Resume: full-state checkpoints continue a run exactly; kills at any moment leave a loadable checkpoint."""
from __future__ import annotations

import copy
import csv
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import ConfigError, read_config
from ding_lite.data import Draw
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.utils import load_file
from entry import serial_pipeline
from entry.kit.config_input import run_state
from policy_zoo import SACPolicy
from tests.conftest import ROOT, TINY_CREATE, TINY_PENDULUM


def _cfg(exp_dir, manager: str = 'base', policy: str = 'sac') -> tuple[EasyDict, EasyDict]:
    """Tiny Pendulum SAC with checkpoints mid-round (2 updates per collect, every 7 iterations) and mid-episode.
    ``policy`` 'crossq' leaves BatchRenorm's warm-up at iteration 30, and 'redq' steps its actor every 3rd
    iteration: both across the crash at 23; 'recurrent' is SAC with an LSTM on sequences, 'rnd' SAC with an RND
    reward signal, 'agents' SAC on a PettingZoo env of three agents that come and go (a slot each), 'masac'
    DI-engine's MASAC on simple_spread, 'chunked' SAC whose buffer writes its rounds of 4 rows 6 at a time and draws 4
    batches at once (a GPU buffer's default, 8 and 8): rows waiting and batches drawn in the resume point; 'drawn'
    SAC whose learn step draws its batch (``DrawingSAC``)."""
    main_cfg = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main_cfg.exp_name = str(exp_dir)
    main_cfg.env.env_kwargs.max_episode_steps = 23
    main_cfg.policy.learn.update_per_collect = 2
    main_cfg.policy.learn.learner.hook.save_ckpt_after_iter = 7
    if policy == 'crossq':
        main_cfg.policy.model.batch_renorm = dict(warmup_steps=30)
    if policy == 'redq':
        main_cfg.policy.learn.policy_delay = 3
    if policy == 'chunked':
        main_cfg.policy.other.replay_buffer.update(push_chunk=6, sample_ahead=4)
        policy = 'sac'
    if policy == 'drawn':  # each batch drawn by the learn step (a graphed GPU run's way), the RNG in the resume point
        policy = 'test_drawing_sac'
    if policy == 'rnd':  # the reward model's nets and optimizer in the resume point
        main_cfg.policy.reward_signals = dict(extrinsic=dict(strength=1.0), rnd=dict(strength=0.1, encoding_size=8))
        policy = 'sac'
    if policy == 'recurrent':  # states, previous actions and sequence links in the resume point
        main_cfg.policy.model.rnn = dict(type='lstm', hidden_size=8, prev_action=True, prev_reward=True)
        main_cfg.policy.collect.unroll_len, main_cfg.policy.burnin_step = 3, 1
        policy = 'sac'
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    if policy == 'agents':  # three agents that come and go, a slot each: their trajectories in the resume point
        main_cfg.env = EasyDict(collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=2, stop_value=1e9,
                                env_id='tests.envs.come_and_go')
        create.env.type, policy = 'pettingzoo', 'sac'
    if policy == 'masac':  # DI-engine's MASAC on simple_spread: dict observations, an agent axis
        main_cfg.env = EasyDict(collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=2, stop_value=1e9,
                                n_agent=2, n_landmark=2, max_cycles=9)
        main_cfg.policy.model = EasyDict(actor_head_hidden_size=16, critic_head_hidden_size=16)
        main_cfg.policy.multi_agent = True
        create.env.type, policy = 'petting_zoo', 'discrete_sac'
    create.env_manager.type = manager
    create.policy.type = policy
    return main_cfg, create


@POLICY_REGISTRY.register('test_drawing_sac', force_overwrite=True)
class DrawingSAC(SACPolicy):
    """SAC whose learn steps take ``Draw``s on the CPU too, as a graphed run's on a GPU do (``learn.graph_sample``):
    the pipeline hands it batches to draw (``draws`` counts them)."""
    draws = 0

    def draws_in_graph(self, buffer) -> bool:
        return True

    def _forward_learn(self, data):
        DrawingSAC.draws += isinstance(data, Draw)
        return super()._forward_learn(data)


def _same_params(a: SACPolicy, b: SACPolicy) -> bool:
    sa, sb = a._model.state_dict(), b._model.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _returns(exp_dir) -> list[tuple[str, str]]:
    rows = csv.DictReader(open(os.path.join(exp_dir, 'log', 'evaluator.csv')))
    return [(r['train_iter'], r['return_mean']) for r in rows]


def _crash_at(monkeypatch, call: int) -> None:
    """Make the learn step raise on its ``call``-th call, as a kill would stop the process there."""
    original, calls = SACPolicy._update, [0]

    def update(self, batch):  # every SAC-family policy's step comes here
        calls[0] += 1
        if calls[0] == call:
            raise KeyboardInterrupt('simulated kill')
        return original(self, batch)
    monkeypatch.setattr(SACPolicy, '_update', update)


@pytest.mark.parametrize('manager, policy', [('base', 'sac'), ('subprocess', 'sac'), ('shared_memory', 'sac'),
                                             ('base', 'crossq'),
                                             ('base', 'redq'), ('base', 'recurrent'), ('base', 'rnd'),
                                             ('subprocess', 'agents'), ('base', 'masac'), ('base', 'chunked'),
                                             ('base', 'drawn')])
def test_resume_mid_round_matches_the_uninterrupted_run_exactly(tmp_path, monkeypatch, manager, policy):
    straight = serial_pipeline(_cfg(tmp_path / 'straight', manager, policy), seed=0, max_train_iter=60)
    with monkeypatch.context() as patch:
        _crash_at(patch, 23)   # after iteration_21 (the first step of a round), mid-episode
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline(_cfg(tmp_path / 'crashed', manager, policy), seed=0, max_train_iter=60)
    ckpt = tmp_path / 'crashed' / 'ckpt'
    assert (ckpt / 'latest').read_text().strip() == 'iteration_21.pth.tar'
    assert (ckpt / 'iteration_21.buffer.pth.tar').is_file() and not (ckpt / 'iteration_14.buffer.pth.tar').exists()
    if policy == 'chunked':
        state = load_file(str(ckpt / 'iteration_21.buffer.pth.tar'))['replay_buffer']
        assert state['ahead'] and state['waiting']
    if policy == 'drawn':
        assert DrawingSAC.draws >= 60 + 22
    rows_before = (tmp_path / 'crashed' / 'log' / 'evaluator.csv').read_text()
    resumed = serial_pipeline(_cfg(tmp_path / 'crashed', manager, policy), seed=0, max_train_iter=60, resume=True)
    assert _same_params(straight, resumed)  # BatchRenorm's statistics and step counter too (model buffers)
    assert _returns(tmp_path / 'crashed') == _returns(tmp_path / 'straight')  # no repeated or missing rows
    assert (tmp_path / 'crashed' / 'log' / 'evaluator.csv').read_text().startswith(rows_before)
    learner_log = (tmp_path / 'crashed' / 'log' / 'learner.txt').read_text()
    assert 'resumed the run from' in learner_log and 'iter 60 ' in learner_log


def test_a_resume_point_after_each_evaluation_continues_a_killed_run_exactly(tmp_path, monkeypatch):
    """``hook.save_ckpt_after_eval`` (bench's runs): with no other resume point, a run killed mid-round continues
    from the one written at its last evaluation, as the uninterrupted run."""
    def cfg(name):
        main, create = _cfg(tmp_path / name)
        main.policy.learn.learner.hook.update(save_ckpt_after_iter=0, save_ckpt_after_seconds=0,
                                              save_ckpt_after_eval=True)
        return main, create
    straight = serial_pipeline(cfg('straight'), seed=0, max_train_iter=40)
    with monkeypatch.context() as patch:
        _crash_at(patch, 25)
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline(cfg('crashed'), seed=0, max_train_iter=40)
    state = torch.load(tmp_path / 'crashed' / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)
    assert state['last_iter'] == int(_returns(tmp_path / 'crashed')[-1][0]) == 20  # its last evaluation's
    resumed = serial_pipeline(cfg('crashed'), seed=0, max_train_iter=40, resume=True)
    assert _same_params(straight, resumed) and _returns(tmp_path / 'crashed') == _returns(tmp_path / 'straight')


def test_runs_are_deterministic_under_either_env_manager(tmp_path):
    base = serial_pipeline(_cfg(tmp_path / 'base'), seed=3, max_train_iter=40)
    again = serial_pipeline(_cfg(tmp_path / 'again'), seed=3, max_train_iter=40)
    sub = serial_pipeline(_cfg(tmp_path / 'sub', 'subprocess'), seed=3, max_train_iter=40)
    shared = serial_pipeline(_cfg(tmp_path / 'shared', 'shared_memory'), seed=3, max_train_iter=40)
    assert _same_params(base, again) and _same_params(base, sub) and _same_params(base, shared)
    assert _returns(tmp_path / 'base') == _returns(tmp_path / 'again') == _returns(tmp_path / 'sub') == \
        _returns(tmp_path / 'shared')
    other = serial_pipeline(_cfg(tmp_path / 'other'), seed=4, max_train_iter=40)
    assert not _same_params(base, other)


def test_resume_from_the_end_continues_counters_and_buffer(tmp_path):
    serial_pipeline(_cfg(tmp_path / 'run'), seed=0, max_train_iter=20)
    assert (tmp_path / 'run' / 'ckpt' / 'latest').read_text().strip() == 'ckpt_last.pth.tar'
    policy = serial_pipeline(_cfg(tmp_path / 'run'), max_train_iter=30, resume=str(tmp_path / 'run'))
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)
    assert state['last_iter'] == 30 and state['run']['collector']['envstep'] > 40
    buffer = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_last.buffer.pth.tar', weights_only=True)
    assert buffer['replay_buffer']['count'] == state['run']['collector']['envstep']  # nothing lost or doubled
    assert isinstance(policy, SACPolicy)


def test_resume_errors_are_clear(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match=r"nothing to resume: no checkpoint file or run folder '.*never'"):
        serial_pipeline(_cfg(tmp_path / 'never'), resume=True)
    assert not (tmp_path / 'never').exists()  # no fresh run in a new folder
    serial_pipeline(_cfg(tmp_path / 'run'), seed=0, max_train_iter=10)
    with pytest.raises(ConfigError, match='--seed 1 differs from the seed 0 of the run being resumed'):
        serial_pipeline(_cfg(tmp_path / 'run'), seed=1, resume=True)
    weights_only = tmp_path / 'run' / 'ckpt' / 'ckpt_best.pth.tar'
    with pytest.raises(ValueError, match='holds weights only, not a run to resume'):
        serial_pipeline(_cfg(tmp_path / 'run'), max_train_iter=20, resume=str(weights_only))
    truncated = tmp_path / 'truncated.pth.tar'
    truncated.write_bytes((tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar').read_bytes()[:500])
    with pytest.raises(ValueError, match='not a readable torch file'):
        serial_pipeline(_cfg(tmp_path / 'run'), max_train_iter=20, resume=str(truncated))


def _write_cli_cfg(tmp_path) -> str:
    main_cfg, create = _cfg('kill_run')
    main_cfg.env.env_kwargs.max_episode_steps = 50
    main_cfg.policy.learn.update_per_collect = 1
    main_cfg.policy.learn.learner.hook.save_ckpt_after_iter = 40
    main_cfg.policy.other.replay_buffer.replay_buffer_size = 50_000
    path = tmp_path / 'kill_cfg.py'
    path.write_text(f"main_config = {dict(main_cfg)!r}\ncreate_config = {dict(create)!r}\n")
    return str(path)


def _run_cli(args: list[str], cwd, kill_after: float | None = None, wait_for=None) -> int:
    """Run the CLI; SIGKILL it ``kill_after`` seconds after start (or after ``wait_for`` appears)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    process = subprocess.Popen([sys.executable, '-m', 'entry.cli', *args], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while wait_for is not None and not wait_for.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        process.wait(timeout=kill_after if kill_after is not None else 300)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.wait()
    return process.returncode


def test_sigkill_at_random_moments_then_resume(tmp_path):
    cfg = _write_cli_cfg(tmp_path)
    exp = tmp_path / 'kill_run'
    budget = ['--max-train-iter', '1500']
    rng = random.Random(0)
    code = _run_cli(['-m', 'serial', '-c', cfg, '-s', '0', *budget], tmp_path, rng.uniform(0.0, 1.0),
                    wait_for=exp / 'ckpt' / 'latest')
    assert code == -signal.SIGKILL and (exp / 'ckpt' / 'latest').is_file()
    rows = _returns(exp)
    for _ in range(4):  # kill each resumed run at a random moment: loading, training, or writing a checkpoint
        _run_cli(['-m', 'serial', '-c', cfg, '--resume', *budget], tmp_path, rng.uniform(1.0, 4.0))
        now = _returns(exp)
        assert now[:len(rows)] == rows and len({it for it, _ in now}) == len(now)  # old rows kept, none twice
        rows = now
    assert _run_cli(['-m', 'serial', '-c', cfg, '--resume', *budget], tmp_path) == 0
    final = _returns(exp)
    assert final[:len(rows)] == rows and [int(it) for it, _ in final] == sorted({int(it) for it, _ in final})
    assert [int(it) for it, _ in final] == list(range(0, 1501, 10))  # every evaluation (the last at the end), once
    assert torch.load(exp / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)['last_iter'] == 1500
    assert not [name for name in os.listdir(exp / 'ckpt') if name.endswith('.tmp')]


def test_deterministic_mode_runs_and_repeats(tmp_path, monkeypatch):
    from ding_lite.utils import set_deterministic
    monkeypatch.delenv('CUBLAS_WORKSPACE_CONFIG', raising=False)
    try:
        serial_pipeline(_cfg(tmp_path / 'plain'), seed=5, max_train_iter=5)  # without the flag: none of it
        assert not torch.are_deterministic_algorithms_enabled() and 'CUBLAS_WORKSPACE_CONFIG' not in os.environ
        runs = []
        for name in ('a', 'b'):
            main_cfg, create = _cfg(tmp_path / name)
            main_cfg.policy.deterministic = True
            runs.append(serial_pipeline((main_cfg, create), seed=5, max_train_iter=20))
        assert torch.are_deterministic_algorithms_enabled() and torch.backends.cudnn.deterministic
        assert os.environ['CUBLAS_WORKSPACE_CONFIG'] == ':4096:8' and _same_params(*runs)
    finally:
        set_deterministic(False)


def test_sqil_with_an_online_expert_resumes_exactly(tmp_path, monkeypatch):
    from entry import serial_pipeline_sqil
    from tests.conftest import untrained_checkpoint

    def cfgs(name):
        main_cfg, create = _cfg(tmp_path / name)
        main_cfg.policy.collect.model_path = ckpt
        main_cfg.policy.expert_random_collect_size = 24
        create.policy.type = 'sqil_sac'
        return main_cfg, create
    ckpt = untrained_checkpoint(_cfg(tmp_path / 'x'), tmp_path / 'expert.pth.tar')
    expert = _cfg(tmp_path / 'expert_exp')
    straight = serial_pipeline_sqil(cfgs('straight'), expert_cfg=expert, seed=0, max_train_iter=40)
    with monkeypatch.context() as patch:
        _crash_at(patch, 17)  # after iteration_14
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline_sqil(cfgs('crashed'), expert_cfg=expert, seed=0, max_train_iter=40)
    saved = torch.load(tmp_path / 'crashed' / 'ckpt' / 'iteration_14.buffer.pth.tar', weights_only=True)
    assert set(saved) == {'replay_buffer', 'expert_buffer'} and saved['expert_buffer']['count'] > 24
    resumed = serial_pipeline_sqil(cfgs('crashed'), expert_cfg=expert, max_train_iter=40, resume=True)
    assert _same_params(straight, resumed)
    assert _returns(tmp_path / 'crashed') == _returns(tmp_path / 'straight')


def test_resume_by_path_continues_in_the_folder_of_that_run(tmp_path):
    """A run moved to a timestamped folder (or any other) is continued there, not in the config's exp_name."""
    serial_pipeline(_cfg(tmp_path / 'first'), seed=0, max_train_iter=20)
    checkpoint = tmp_path / 'first' / 'ckpt' / 'ckpt_last.pth.tar'
    serial_pipeline(_cfg(tmp_path / 'other'), max_train_iter=30, resume=str(checkpoint))
    assert not (tmp_path / 'other').exists()
    assert 'resumed the run from' in (tmp_path / 'first' / 'log' / 'learner.txt').read_text()


def test_resuming_a_finished_run_trains_and_evaluates_no_more(tmp_path):
    """A kill after the final checkpoint, then ``--resume``: the run is already at its budget and ends there."""
    cfg = _cfg(tmp_path / 'run')
    serial_pipeline(copy.deepcopy(cfg), seed=0, max_train_iter=40)   # eval_freq 10: 0, 10, 20, 30; 40 at the end
    rows = _returns(tmp_path / 'run')
    assert [int(it) for it, _ in rows] == [0, 10, 20, 30, 40]
    policy = serial_pipeline(copy.deepcopy(cfg), seed=0, max_train_iter=40, resume=True)
    assert _returns(tmp_path / 'run') == rows                          # no second evaluation at 40
    straight = serial_pipeline(_cfg(tmp_path / 'straight'), seed=0, max_train_iter=40)
    assert _same_params(policy, straight)                               # and no learn step beyond the budget


def _interrupt_cli(args: list[str], cwd, wait_for, delay: float, twice: bool = False) -> tuple[int, str]:
    """Run the CLI, send SIGINT ``delay`` seconds after ``wait_for`` appears (twice: a second one at once)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    process = subprocess.Popen([sys.executable, '-m', 'entry.cli', *args], cwd=cwd, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not wait_for() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(delay)
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        if twice:
            time.sleep(0.01)
            process.send_signal(signal.SIGINT)
    return process.wait(timeout=120), process.stdout.read()


def test_ctrl_c_at_random_moments_keeps_the_work_and_resumes_bitwise(tmp_path):
    cfg = _write_cli_cfg(tmp_path)
    budget = ['--max-train-iter', '300']
    main_cfg, create = read_config(cfg)
    main_cfg.exp_name = str(tmp_path / 'straight')
    serial_pipeline((main_cfg, create), seed=0, max_train_iter=300)  # the run that was never interrupted
    exp, rng = tmp_path / 'kill_run', random.Random(1)
    csv_rows = lambda: (exp / 'log' / 'evaluator.csv').exists() and len(_returns(exp)) > 0  # noqa: E731
    code, out = _interrupt_cli(['-m', 'serial', '-c', cfg, '-s', '0', *budget], tmp_path, csv_rows,
                               rng.uniform(0.0, 0.5))
    hint = f"is a resume point; continue it with: {sys.executable} -m entry.cli -m " \
        f"serial -c {cfg} -s 0 --max-train-iter 300 --resume kill_run\n"  # that run's folder, whatever else exists
    assert code == 130 and hint in out, out
    assert (exp / 'ckpt' / 'latest').read_text().strip() == 'ckpt_last.pth.tar'  # written by Ctrl-C itself
    stopped = torch.load(exp / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)['last_iter']
    assert 0 <= stopped < 300
    resumed = lambda: 'resumed the run from' in (exp / 'log' / 'learner.txt').read_text()  # noqa: E731
    code, _ = _interrupt_cli(['-m', 'serial', '-c', cfg, '--resume', *budget], tmp_path, resumed,
                             rng.uniform(0.0, 0.5), twice=True)  # a second Ctrl-C: out at once
    assert code == 130 and (exp / 'ckpt' / 'latest').is_file()
    assert _run_cli(['-m', 'serial', '-c', cfg, '--resume', *budget], tmp_path) == 0
    final = torch.load(exp / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)
    straight = torch.load(tmp_path / 'straight' / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)
    assert final['last_iter'] == straight['last_iter'] == 300
    for key in ('model', 'target_model'):
        assert all(torch.equal(final[key][k], v) for k, v in straight[key].items()), key
    assert _returns(exp) == _returns(tmp_path / 'straight')


def test_resume_without_a_seed_never_picks_a_finished_run_and_a_finished_run_stays_so(tmp_path, monkeypatch, capsys):
    config = lambda: _cfg(tmp_path / 'exp_seed0')  # noqa: E731 (a _seed<K> name: -s K picks the folder)
    serial_pipeline(config(), seed=2, max_train_iter=10)       # exp_seed2: finished
    for seed in (0, 1):
        with monkeypatch.context() as patch:
            _crash_at(patch, 9)                                 # exp_seed0, exp_seed1: killed after iteration_7
            with pytest.raises(KeyboardInterrupt):
                serial_pipeline(config(), seed=seed, max_train_iter=30)
    with pytest.raises(ConfigError, match=r"--resume without a seed: 2 runs of this config can be resumed: "
                                          r".*exp_seed0 \(interrupted at env step \d+\); .*exp_seed1 \(interrupted "
                                          r"at env step \d+\)\. Give the run's seed \(-s K\) or its folder"):
        serial_pipeline(config(), resume=True, max_train_iter=30)
    (tmp_path / 'exp_seed1').rename(tmp_path / 'elsewhere')  # one interrupted run left beside the finished one
    serial_pipeline(config(), resume=True, max_train_iter=30)
    assert load_file(str(tmp_path / 'exp_seed0' / 'ckpt' / 'ckpt_last.pth.tar'))['last_iter'] == 30
    with pytest.raises(ConfigError, match=r"every run of this config has finished: .*exp_seed0 \(finished at env "
                                          r"step \d+\); .*exp_seed2 \(finished"):
        serial_pipeline(config(), resume=True)
    capsys.readouterr()
    rows = len(_returns(tmp_path / 'exp_seed2'))
    serial_pipeline(config(), seed=2, resume=True)              # no budget given: the one it ended at
    assert 'exp_seed2 had already finished at ' in capsys.readouterr().out
    assert len(_returns(tmp_path / 'exp_seed2')) == rows      # nothing trained, nothing evaluated again
    serial_pipeline(config(), seed=2, resume=True, max_train_iter=20)  # a raised budget continues it
    state = load_file(str(tmp_path / 'exp_seed2' / 'ckpt' / 'ckpt_last.pth.tar'))
    assert state['last_iter'] == 20 and state['run']['loop']['seed'] == 2
    with monkeypatch.context() as patch:  # continued again, and killed after its resume point at iteration 28
        _crash_at(patch, 10)
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline(config(), seed=2, resume=True, max_train_iter=40)
    assert run_state(str(tmp_path / 'exp_seed2')).startswith('interrupted at env step')


def test_a_run_whose_drawn_update_sums_in_its_graph_logs_and_learns_as_one_summing_on_the_host(tmp_path, monkeypatch):
    """A serial run whose learn steps draw their batches through a graph (the stand-in) that sums their statistics
    logs every line, bit for bit, and learns every weight as the same run whose learner sums them."""
    from ding_lite.rl_utils.update_executor import UpdateExecutor
    from ding_lite.worker.step_sums import StepSums
    from tests.ding_lite.test_cuda_graph import _Recorded
    adopted, add = [], StepSums.add
    monkeypatch.setattr(StepSums, 'add', lambda self, output: add(self, output) or adopted.append(
        self._graph is not None))
    runs = {}
    for sums in (True, False):
        def drawn(self, update, prepare, sums=sums):
            return _Recorded(lambda draw: update(prepare(draw.gather())), torch.device('cpu'), 'the update', sums=sums)
        monkeypatch.setattr(UpdateExecutor, 'drawn', drawn)
        adopted.clear()
        policy = serial_pipeline(_cfg(tmp_path / str(sums), 'base', 'drawn'), seed=0, max_train_iter=40)
        log = (tmp_path / str(sums) / 'log' / 'learner.txt').read_text().splitlines()
        runs[sums] = policy, [line.split('] ', 1)[1] for line in log if 'critic_loss' in line], sum(adopted)
    assert runs[True][2] > 20 and runs[False][2] == 0      # the statistics of most steps stayed in the graph
    assert len(runs[True][1]) >= 7 and runs[True][1] == runs[False][1]
    params = [dict(runs[s][0]._model.state_dict()) for s in (True, False)]
    assert all(torch.equal(params[0][key], params[1][key]) for key in params[0])
