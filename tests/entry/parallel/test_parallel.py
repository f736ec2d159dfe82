"""The parallel pipeline on a local Ray: learning, actor failures, accounting, Ctrl-C, resume and shutdown."""
from __future__ import annotations

import copy
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import ConfigError, compile_config, read_config
from ding_lite.registry import ENV_REGISTRY, LEARNER_REGISTRY
from ding_lite.utils import load_file
from ding_lite.worker import BaseLearner
from envs import PendulumEnv
from tests.conftest import ROOT, TINY_CREATE, TINY_PENDULUM, first_envstep_reaching, zoo_config

ray = pytest.importorskip('ray', reason="the parallel pipeline needs Ray: pip install 'ding-lite[parallel]'")
ray_put = ray.put
from entry import parallel_pipeline  # noqa: E402
from entry.parallel.workers import NAMESPACE, ActorFailure  # noqa: E402


@pytest.fixture(scope='module')
def ray_tmp():
    """Ray's session folder for this module, removed afterwards: nothing left in the system temp folder (a short
    path of its own, as Ray's sockets need)."""
    folder = tempfile.mkdtemp(prefix='ding_lite_ray_')
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope='module')
def local_ray(ray_tmp):
    """One local Ray for this module's in-process runs (the pipeline uses a Ray it finds running and leaves it
    up); the CLI test starts and stops its own."""
    ray.init(num_cpus=4, include_dashboard=False, logging_level='WARNING', _temp_dir=ray_tmp)
    yield
    ray.shutdown()


def _cli_env(ray_tmp: str) -> dict[str, str]:
    """A CLI run's environment: this checkout importable from the test's folder, Ray's files in ``ray_tmp``."""
    return {**os.environ, 'PYTHONPATH': ROOT, 'RAY_TMPDIR': ray_tmp}


def _tiny(tmp_path, name='tiny', **parallel):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / name)
    main.parallel = dict(collector_num=2, **parallel)
    return main, EasyDict(copy.deepcopy(TINY_CREATE))


def _last_state(exp: str) -> tuple[dict, dict]:
    """The final resume point of ``exp`` and its buffer file."""
    state = load_file(os.path.join(exp, 'ckpt', 'ckpt_last.pth.tar'))
    return state, load_file(os.path.join(exp, 'ckpt', state['buffer_file']))['replay_buffer']


# ---- config ----
def test_parallel_section_is_declared_checked_and_saved(tmp_path):
    main, create = _tiny(tmp_path, weight_sync_interval=3, ray_address='auto')
    cfg = compile_config(main, create)
    assert cfg.parallel == dict(collector_num=2, ray_address='auto', num_cpus_per_collector=1.0,
                                weight_sync_interval=3, max_actor_restarts=3, placement_timeout=30.0)
    assert read_config(os.path.join(cfg.exp_name, 'total_config.py'))[0].parallel == cfg.parallel
    serial = compile_config(*zoo_config('pendulum_sac_config', tmp_path / 'serial'), save_cfg=False)
    assert serial.parallel.collector_num == 2  # declared defaults: a serial config needs no section
    for bad, message in [(dict(colector_num=2), "did you mean 'parallel.collector_num'"),
                         (dict(collector_num=0), "'parallel.collector_num' must be a positive number"),
                         (dict(max_actor_restarts=-1), "'parallel.max_actor_restarts' must be a number >= 0"),
                         (dict(ray_address=6379), "'parallel.ray_address' must be None"),
                         (dict(weight_sync_interval=0.5), "'parallel.weight_sync_interval' must be an int"),
                         (dict(placement_timeout=0), "'parallel.placement_timeout' must be a number of seconds > 0")]:
        main.parallel = bad
        with pytest.raises(ConfigError, match=message):
            compile_config(main, create, save_cfg=False)


# ---- learning ----
def test_pendulum_with_two_collectors_reaches_minus_250(tmp_path, local_ray):
    """Serial SAC reaches -250 at 32-33k env steps (seeds 0-4); with 2 collectors acting with weights up to 10
    learn steps old, seeds 0-4 reached it at 31k / 32k / 31k / 32k / 32k. Which weights a request carries depends
    on timing, so the bound leaves more room than the serial test's 40k."""
    main, create = zoo_config('pendulum_sac_config', tmp_path / 'pendulum')
    main.parallel = dict(collector_num=2)
    parallel_pipeline((main, create), seed=0, max_env_step=45_000)
    steps = first_envstep_reaching(tmp_path / 'pendulum' / 'log' / 'evaluator.csv', -250)
    assert steps is not None and steps <= 45_000


# ---- actor failures and accounting ----
class KillingLearner(BaseLearner):
    """Kills collector 1's actor (with ``ray.kill``, as a node loss would) at train iteration 20."""

    def train(self, data, envstep=-1):
        output = super().train(data, envstep)
        if self.train_iter == 20:
            ray.kill(ray.get_actor(f'ding_lite:{self.exp_name}:collector1:0', namespace=NAMESPACE))
        return output


def test_killed_collector_is_replaced_and_transitions_are_accounted(tmp_path, local_ray):
    LEARNER_REGISTRY.register('killing', KillingLearner, force_overwrite=True)
    main, create = _tiny(tmp_path, max_actor_restarts=1)
    main.policy.learn.learner.type = 'killing'
    parallel_pipeline((main, create), seed=0, max_env_step=400)
    state, buffer = _last_state(main.exp_name)
    loop = state['run']['loop']
    assert loop['restarts'] == [0, 1, 0] and loop['generation'] == [0, 1, 0]
    # the killed actor's request in flight is lost whole (n_sample, or its warm-up share), nothing else
    assert loop['lost'] in (4, 20)
    # every transition received went into the buffer once; the run still reached its budget
    assert loop['envstep'] >= 400 and buffer['count'] == loop['envstep'] == state['last_envstep']
    log = open(tmp_path / 'tiny' / 'log' / 'parallel.txt').read()
    assert 'collector 1 actor failed (ActorDiedError' in log and 'replaced it (restart 1 of 1)' in log
    summary = open(tmp_path / 'tiny' / 'log' / 'summary.txt').read()
    assert f"{loop['envstep']} transitions received, {loop['lost']} lost in 1 actor restarts" in summary


@ENV_REGISTRY.register('crashing_pendulum', force_overwrite=True)
class CrashingPendulumEnv(PendulumEnv):
    """Raises at its 30th step: once per run where ``crash_once_file`` is set (that file marks it), else always."""

    config = dict(crash_once_file=None)  # a key of its own: declared, as every env type's

    def __init__(self, cfg):
        super().__init__(cfg)
        self._marker, self._steps = cfg.get('crash_once_file'), 0

    def step(self, action):
        self._steps += 1
        if self._steps == 30 and (not self._marker or _first_to_make(self._marker)):
            raise RuntimeError('simulator exploded')
        return super().step(action)


def _first_to_make(path: str) -> bool:
    """Create ``path``; whether this call made it (atomic: of the actors that reach it at once, one crashes)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def test_env_crash_escaping_the_manager_replaces_the_actor(tmp_path, local_ray):
    main, create = _tiny(tmp_path)
    main.env.crash_once_file = str(tmp_path / 'crashed')
    create.env.type = 'crashing_pendulum'
    parallel_pipeline((main, create), seed=0, max_env_step=300)
    state, buffer = _last_state(main.exp_name)
    assert sum(state['run']['loop']['restarts']) == 1 and buffer['count'] == state['run']['loop']['envstep'] >= 300
    assert 'actor failed (RuntimeError: simulator exploded); replaced it' in \
        open(tmp_path / 'tiny' / 'log' / 'parallel.txt').read()


def test_an_actor_failing_past_max_actor_restarts_stops_the_run_clearly(tmp_path, local_ray):
    main, create = _tiny(tmp_path, max_actor_restarts=1)
    create.env.type = 'crashing_pendulum'
    with pytest.raises(ActorFailure, match=r"actor failed 2 times \(parallel.max_actor_restarts=1\); last error: "
                                           r"RuntimeError: simulator exploded"):
        parallel_pipeline((main, create), seed=0, max_env_step=300)
    assert not [a for a in ray.util.list_named_actors(all_namespaces=True)  # every actor of the run was stopped
                if a['name'].startswith(f'ding_lite:{main.exp_name}')]
    state, buffer = _last_state(main.exp_name)  # a resume point first, as of the last whole step
    assert (tmp_path / 'tiny' / 'ckpt' / 'latest').read_text().strip() == 'ckpt_last.pth.tar'
    assert buffer['count'] == state['run']['loop']['envstep'] > 0
    assert 'ActorFailure stopped the run at env step' in (tmp_path / 'tiny' / 'log' / 'summary.txt').read_text()


def test_actors_adapt_spaces_as_the_serial_pipeline_and_normalise_with_the_drivers_statistics(tmp_path, local_ray):
    """A Dict observation made by a config wrapper is flattened in the actors too; the normaliser's statistics come
    from the transitions the actors sent, and the evaluator actor acts with them (its result repeats serially)."""
    from entry import eval as evaluate
    main, create = _tiny(tmp_path)
    main.env.update(wrappers=[dict(type='TimeAwareObservation', flatten=False)], norm_obs=dict(use_norm=True))
    del main.policy.model['obs_shape']  # read from the env: 3 + the time step
    parallel_pipeline((main, create), seed=0, max_env_step=200)
    state, buffer = _last_state(main.exp_name)
    obs = buffer['data'][('obs',)]
    assert obs.shape[1:] == (4,) and state['model']['obs_norm.count'].item() == len(obs) >= 200
    torch.testing.assert_close(state['model']['obs_norm.mean'], obs.double().mean(0))
    rows = (tmp_path / 'tiny' / 'log' / 'evaluator.csv').read_text().splitlines()[1:]
    best = max(float(row.split(',')[3]) for row in rows)
    ckpt = os.path.join(main.exp_name, 'ckpt', 'ckpt_best.pth.tar')
    assert evaluate((main, create), seed=0, load_path=ckpt) == pytest.approx(best, rel=1e-5)


def test_actors_act_with_the_drivers_model_and_weights_travel_once_per_broadcast(tmp_path, local_ray,
                                                                                 monkeypatch):
    """A user's model instance is what the actors act with: the evaluation at iteration 0 equals a serial
    evaluation of its weights (and the one at the budget's end, of the weights it ends with). Each broadcast is one
    ``ray.put`` shared by every collector, not one per actor."""
    from ding_lite.model import ContinuousQAC
    from entry import eval as evaluate
    puts = []
    monkeypatch.setattr(ray, 'put', lambda value, **kw: puts.append(value) or ray_put(value, **kw))
    main, create = _tiny(tmp_path, weight_sync_interval=5)
    main.policy.eval.evaluator.eval_freq = 10 ** 6  # only the evaluations at iteration 0 and at the end
    torch.manual_seed(123)
    model = ContinuousQAC(obs_shape=3, action_shape=1, twin_critic=True, actor_head_hidden_size=16,
                          critic_head_hidden_size=16)
    initial = copy.deepcopy(model.state_dict())
    policy = parallel_pipeline((main, create), seed=3, model=model, max_env_step=200)
    assert policy.model is model
    rows = [row.split(',') for row in (tmp_path / 'tiny' / 'log' / 'evaluator.csv').read_text().splitlines()[1:]]
    last = load_file(os.path.join(main.exp_name, 'ckpt', 'ckpt_last.pth.tar'))
    train_iter = last['last_iter']
    assert [int(row[0]) for row in rows] == [0, train_iter]
    first = {'model': initial, 'target_model': initial}
    assert float(rows[0][3]) == pytest.approx(evaluate((main, create), seed=3, state_dict=first), rel=1e-5)
    assert float(rows[1][3]) == pytest.approx(evaluate((main, create), seed=3, state_dict=last), rel=1e-5)
    best = load_file(os.path.join(main.exp_name, 'ckpt', 'ckpt_best.pth.tar'))
    assert best['last_iter'] in (0, train_iter)  # the better of the two
    weights = [p for p in puts if isinstance(p, dict) and 'actor.0.0.weight' in p]
    assert 1 <= len(weights) <= train_iter // 5 + 2  # one per interval (+ the evaluation's), for both collectors


def test_actors_share_the_cpus_of_a_smaller_running_ray(tmp_path, local_ray):
    """4 collectors and the evaluator ask for 5 CPUs of a Ray with 4: each reserves 80%, rather than one waiting
    for a CPU forever."""
    main, create = _tiny(tmp_path)
    main.parallel.collector_num = 4
    parallel_pipeline((main, create), seed=0, max_env_step=120)
    assert 'ask for 5: each actor reserves 80% of that' in (tmp_path / 'tiny' / 'log' / 'parallel.txt').read_text()
    _, buffer = _last_state(main.exp_name)
    assert buffer['count'] >= 120


def test_resuming_a_finished_run_trains_and_evaluates_no_more(tmp_path, local_ray):
    main, create = _tiny(tmp_path)
    parallel_pipeline((copy.deepcopy(main), create), seed=0, max_train_iter=30)
    csv_path = tmp_path / 'tiny' / 'log' / 'evaluator.csv'
    rows, state = csv_path.read_text(), _last_state(main.exp_name)[0]
    assert state['last_iter'] == 30
    policy = parallel_pipeline((copy.deepcopy(main), create), seed=0, max_train_iter=30, resume=True)
    assert csv_path.read_text() == rows and _last_state(main.exp_name)[0]['last_iter'] == 30
    for key, value in state['model'].items():                             # no learn step past the budget
        torch.testing.assert_close(policy.model.state_dict()[key], value, rtol=0, atol=0)


# ---- the command line: Ctrl-C, resume, shutdown ----
def _ray_processes(ray_tmp: str) -> set[int]:
    """The Ray processes started with ``RAY_TMPDIR=ray_tmp`` (this test's; not another test's Ray on another
    worker)."""
    pids, mark = set(), f'RAY_TMPDIR={ray_tmp}'.encode() + b'\0'
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            cmdline = open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\0', b' ')
            ours = mark in open(f'/proc/{pid}/environ', 'rb').read()
        except OSError:
            continue
        if ours and any(key in cmdline for key in (b'raylet', b'gcs_server', b'ray::', b'ray/_private',
                                                   b'ray/dashboard')):
            pids.add(int(pid))
    return pids


def _wait_gone(before: set[int], ray_tmp: str, seconds: float = 15) -> set[int]:
    deadline = time.time() + seconds
    while (left := _ray_processes(ray_tmp) - before) and time.time() < deadline:
        time.sleep(0.5)
    return left


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='reads /proc to find Ray processes')
def test_cli_parallel_ctrl_c_resume_and_no_ray_left(tmp_path, ray_tmp):
    main, create = _tiny(tmp_path, name='cli')
    main.policy.learn.learner.hook.save_ckpt_after_iter = 10 ** 6  # the resume point must come from Ctrl-C
    cli = [sys.executable, '-m', 'entry.cli', '-m', 'parallel', '-c', _write(tmp_path, main, create)]
    before = _ray_processes(ray_tmp)
    process = subprocess.Popen(cli + ['-s', '0'], cwd=tmp_path, env=_cli_env(ray_tmp), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    csv = tmp_path / 'cli' / 'log' / 'evaluator.csv'
    deadline = time.time() + 120
    while not (csv.exists() and len(csv.read_text().splitlines()) >= 3) and time.time() < deadline:
        time.sleep(0.2)
    assert _ray_processes(ray_tmp) - before, "the check sees this run's Ray processes"
    process.send_signal(signal.SIGINT)
    output = process.communicate(timeout=120)[0].decode()
    assert process.returncode == 130, output
    assert 'is a resume point' in output
    assert (tmp_path / 'cli' / 'ckpt' / 'latest').read_text().strip() == 'ckpt_last.pth.tar'
    assert not _wait_gone(before, ray_tmp), 'Ray processes left behind after Ctrl-C'
    stopped, _ = _last_state(str(tmp_path / 'cli'))

    resumed = subprocess.run(cli + ['--resume', '--max-env-step', str(stopped['last_envstep'] + 200)], cwd=tmp_path,
                             env=_cli_env(ray_tmp), capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    state, buffer = _last_state(str(tmp_path / 'cli'))
    assert state['last_iter'] > stopped['last_iter'] and state['last_envstep'] >= stopped['last_envstep'] + 200
    assert buffer['count'] == state['run']['loop']['envstep']  # the saved buffer was restored, then added to
    rows = [int(line.split(',')[0]) for line in csv.read_text().splitlines()[1:]]
    assert rows == sorted(set(rows)) and rows[-1] > stopped['last_iter']  # appended, no row twice
    assert not _wait_gone(before, ray_tmp), 'Ray processes left behind after a finished run'


def test_missing_ray_address_is_a_clear_error(tmp_path, ray_tmp):
    main, create = _tiny(tmp_path, ray_address='127.0.0.1:1')
    result = subprocess.run([sys.executable, '-m', 'entry.cli', '-m', 'parallel', '-c', _write(tmp_path, main, create)],
                            cwd=tmp_path, env=_cli_env(ray_tmp), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "ding_lite: error: ConnectionError: could not join Ray at '127.0.0.1:1' (from parallel.ray_address=" \
           "'127.0.0.1:1'): ConnectionError: nothing answers at 127.0.0.1:1" in result.stderr
    assert not (tmp_path / 'tiny').exists()  # a run that failed to start leaves no folder


def _write(tmp_path, main, create) -> str:
    path = tmp_path / 'config.py'
    path.write_text(f"main_config = {dict(main)!r}\ncreate_config = {dict(create)!r}\n")
    return str(path)


def test_a_parallel_run_logs_its_times_info_metrics_and_stats_entropy_and_histograms(tmp_path, local_ray):
    from tests.tb_events import read_histogram_tags, read_scalars
    main, create = _tiny(tmp_path)
    main.env.update(evaluator_env_num=1, n_evaluator_episode=2, info_metrics=['coins'],
                    info_stats={'speed': 'average', 'one': 'sum'},
                    wrappers=[f'tests.entry.pipeline.test_run_metrics.{w}' for w in ('AlternatingSuccess', 'StepStats')])
    main.policy.collect.collector = dict(collect_print_freq=5)
    main.policy.learn.learner.log_histograms = True
    parallel_pipeline((main, create), seed=0, max_env_step=200)
    logdir = os.path.join(main.exp_name, 'log', 'parallel')
    scalars = read_scalars(logdir)
    shares = [sum(scalars[f'time/{k}'][i][1] for k in ('collect', 'learn', 'eval', 'other'))
              for i in range(len(scalars['time/learn']))]
    assert shares and all(s == pytest.approx(1.0, abs=1e-4) for s in shares)
    assert all(v > 0 for _, v in scalars['time/updates_per_s']) and 'time/env_steps_per_s' in scalars
    assert {v for _, v in scalars['evaluator/success_rate']} == {0.5} and 'collector/success_rate' in scalars
    assert {v for _, v in scalars['collector/coins']} == {3.0} and 'collector/entropy' in scalars
    assert {v for _, v in scalars['collector/speed']} == {2.5} and {v for _, v in scalars['evaluator/one']} == {40}
    assert read_histogram_tags(logdir) == {'collector/action', 'collector/reward'}
    assert 'success_rate' in open(os.path.join(main.exp_name, 'log', 'evaluator.csv')).readline()
