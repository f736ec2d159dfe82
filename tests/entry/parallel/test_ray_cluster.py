"""The parallel pipeline on a multi-node Ray cluster (``ray.cluster_utils.Cluster``: a head without CPUs and three
1-CPU worker nodes, so each actor has a node of its own): a lost node's actor is replaced at a CPU share the
shrunken cluster can place, evaluations go on, and the run finishes; an address nobody answers at."""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from easydict import EasyDict

from ding_lite.utils import load_file
from tests.conftest import ROOT, TINY_CREATE, TINY_PENDULUM

ray = pytest.importorskip('ray', reason="the parallel pipeline needs Ray: pip install 'ding-lite[parallel]'")
from ray.cluster_utils import Cluster  # noqa: E402
from entry import parallel_pipeline  # noqa: E402


@pytest.fixture(scope='module')
def ray_tmp():
    folder = tempfile.mkdtemp(prefix='ding_lite_rc_')
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope='module')
def cluster(ray_tmp):
    # Ray's Cluster writes the head's address into the default temp folder whatever temp_dir says (Ray 2.60), and
    # fails where that folder is not there yet (a fresh machine): make it, and take the file away after
    address_file = ray._private.utils.get_ray_address_file(None)
    os.makedirs(os.path.dirname(address_file), exist_ok=True)
    had_address = os.path.exists(address_file)
    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=0, include_dashboard=False,
                                                                temp_dir=ray_tmp))
    ray.init(address=cluster.address, include_dashboard=False, logging_level='WARNING')
    yield cluster
    ray.shutdown()
    cluster.shutdown()
    if not had_address and os.path.exists(address_file):
        os.remove(address_file)


def _three_worker_nodes(cluster):
    while len([n for n in cluster.worker_nodes]) < 3:
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()


def _tiny(tmp_path, name):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / name)
    main.parallel = dict(collector_num=2)  # placement_timeout's default (30 s): a lost node is known at once
    return main, EasyDict(copy.deepcopy(TINY_CREATE))


def _remove_node_of(cluster, actor_name: str, csv: str, rows: int, lost: dict, done: threading.Event) -> None:
    """Once ``csv`` has ``rows`` evaluations, remove the worker node ``actor_name`` runs on (noting the env step)."""
    while not done.is_set() and not (os.path.exists(csv) and len(open(csv).read().splitlines()) > rows):
        time.sleep(0.1)
    if done.is_set():
        return
    node_id = next(a['Address']['NodeID'] for a in ray._private.state.actors().values()
                   if a['Name'] == actor_name and a['State'] == 'ALIVE')
    node = next(n for n in cluster.worker_nodes if n.node_id == node_id)
    lost['envstep'] = int(open(csv).read().splitlines()[-1].split(',')[1])
    cluster.remove_node(node)


# env steps of a node-loss run: the node goes at the first evaluation; the replacement is asked for at a share that
# fits as soon as the cluster says the node is lost (removing a node takes a while, and the run goes on meanwhile)
BUDGET = 4000


def _watch_slot(prefix: str, seen: list, done: threading.Event, states: dict | None = None,
                came_up: threading.Event | None = None) -> None:
    """Until ``done``, twice a second: the actors of one slot (names starting with ``prefix``) that are not dead, in
    ``states`` every state each name was seen in, and ``came_up`` set once a replacement (not ``:0``) is alive."""
    while not done.is_set():
        actors = [a for a in ray._private.state.actors().values() if a['Name'].startswith(prefix)]
        seen.append(sorted(a['Name'] for a in actors if a['State'] != 'DEAD'))
        for actor in actors if states is not None else ():
            states.setdefault(actor['Name'], []).append(actor['State'])
            if came_up is not None and actor['State'] == 'ALIVE' and not actor['Name'].endswith(':0'):
                came_up.set()
        time.sleep(0.5)


def _learn_slowly_until(monkeypatch, lost: dict, came_up: threading.Event, patience: float = 60.0) -> None:
    """Once the node is lost, the learner waits 50 ms a step until the replacement is seen alive (at most
    ``patience`` seconds): on a loaded machine a new actor's process can take longer to start than the rest of
    the run, and the test is of what serves the run after the loss, not of how fast Ray starts a process."""
    from ding_lite.worker.learner import BaseLearner
    train, since = BaseLearner.train, {}

    def slowed(self, *args, **kwargs):
        if lost and not came_up.is_set() and time.monotonic() - since.setdefault('t', time.monotonic()) < patience:
            time.sleep(0.05)
        return train(self, *args, **kwargs)
    monkeypatch.setattr(BaseLearner, 'train', slowed)


def _run_losing(cluster, tmp_path, monkeypatch, kind: str):
    _three_worker_nodes(cluster)
    main, create = _tiny(tmp_path, kind)
    csv, lost = os.path.join(main.exp_name, 'log', 'evaluator.csv'), {}
    slot = 'evaluator' if kind == 'evaluator' else 'collector1'
    name = f"ding_lite:{main.exp_name}:{slot}:0"
    done, seen, states, came_up = threading.Event(), [], {}, threading.Event()
    _learn_slowly_until(monkeypatch, lost, came_up)
    killer = threading.Thread(target=_remove_node_of, args=(cluster, name, csv, 1, lost, done))
    watcher = threading.Thread(target=_watch_slot, args=(f"ding_lite:{main.exp_name}:{slot}:", seen, done, states,
                                                         came_up))
    killer.start()
    watcher.start()
    try:
        parallel_pipeline((main, create), seed=0, max_env_step=BUDGET)
    finally:
        done.set()
        killer.join()
        watcher.join()
    # the replacement the lost node's CPUs cannot hold is cancelled, not left pending beside the one that fits
    assert all(len(names) <= 1 for names in seen), [names for names in seen if len(names) > 1]
    assert lost, "the run ended before the node was removed"
    print({name: sorted(set(s)) for name, s in states.items()})
    # what serves the run after the loss is visible under its names: a replacement that came up, none left pending
    assert any('ALIVE' in s for name, s in states.items() if not name.endswith(':0')), states
    assert all(s[-1] != 'PENDING_CREATION' for s in states.values()), states
    state = load_file(os.path.join(main.exp_name, 'ckpt', 'ckpt_last.pth.tar'))
    rows = [line.split(',') for line in open(csv).read().splitlines()[1:]]
    log = open(os.path.join(main.exp_name, 'log', 'parallel.txt')).read()
    left = [a for a in ray.util.list_named_actors(all_namespaces=True)
            if a['name'].startswith(f'ding_lite:{main.exp_name}')]
    return state, rows, log, lost, left


def test_losing_the_evaluators_node_replaces_it_at_a_share_that_fits(cluster, tmp_path, monkeypatch):
    state, rows, log, lost, left = _run_losing(cluster, tmp_path, monkeypatch, 'evaluator')
    assert state['last_envstep'] >= BUDGET
    after = [row for row in rows if int(row[1]) > lost['envstep']]
    assert len(after) >= 2, f'{len(after)} evaluations after the evaluator node was lost at {lost["envstep"]}'
    assert 'evaluator actor failed' in log and 'The actor died because its node has died' in log
    assert 'evaluator actor was not placed after' in log and 'lost nodes: ' in log  # the 2 CPUs left are taken
    assert state['run']['loop']['lost'] == 0 and not left


def test_losing_a_collectors_node_loses_no_more_than_its_requests_in_flight(cluster, tmp_path, monkeypatch):
    state, rows, log, lost, left = _run_losing(cluster, tmp_path, monkeypatch, 'collector')
    assert state['last_envstep'] >= BUDGET and 'collector 1 actor failed' in log
    assert 'collector 1 actor was not placed after' in log
    assert 0 < state['run']['loop']['lost'] <= 2 * 4  # the dead actor's request and the unplaced one's (n_sample 4)
    assert any(int(row[1]) > lost['envstep'] for row in rows) and not left


def _cli(tmp_path, env_extra, *args):
    main, create = _tiny(tmp_path, 'cli')
    path = tmp_path / 'config.py'
    path.write_text(f"main_config = {dict(main)!r}\ncreate_config = {dict(create)!r}\n")
    env = {**os.environ, 'PYTHONPATH': ROOT, **env_extra}
    start = time.time()
    result = subprocess.run([sys.executable, '-m', 'entry.cli', '-m', 'parallel', '-c', str(path), *args],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    return result, time.time() - start


@pytest.mark.parametrize('address, message', [
    ('RAY_ADDRESS=127.0.0.1:1', "could not join Ray at '127.0.0.1:1' (from RAY_ADDRESS='127.0.0.1:1'): "
                                "ConnectionError: nothing answers at 127.0.0.1:1"),
    ('--set=parallel.ray_address=auto', "could not join Ray at 'auto' (from parallel.ray_address='auto'): "
                                        "ConnectionError: no Ray cluster was started on this machine"),
])
def test_an_address_nobody_answers_at_fails_within_seconds_and_starts_no_ray(tmp_path, address, message):
    ray_dir = tmp_path / 'ray_tmp'
    ray_dir.mkdir()
    env = {'RAY_TMPDIR': str(ray_dir), 'RAY_ADDRESS': ''}
    if address.startswith('RAY_ADDRESS='):
        env['RAY_ADDRESS'] = address.split('=', 1)[1]
        args = ()
    else:
        args = (address,)
    result, seconds = _cli(tmp_path, env, *args)
    assert result.returncode == 1 and seconds < 30, result.stderr
    assert f"ding_lite: error: ConnectionError: {message}" in result.stderr.strip().splitlines()[-1]
    assert not os.listdir(ray_dir) and not (tmp_path / 'cli').exists()  # no Ray started, no run folder left


@pytest.mark.parametrize('tool', ['bench', 'tune'])
def test_bench_and_tune_join_ray_as_the_parallel_pipeline_does(tmp_path, tool):
    """One module joins Ray for all three: an address nobody answers at fails within seconds with the pipeline's
    message, and nothing is started."""
    main, create = _tiny(tmp_path, 'joined')
    path = tmp_path / 'config.py'
    path.write_text(f"main_config = {dict(main)!r}\ncreate_config = {dict(create)!r}\n")
    ray_dir = tmp_path / 'ray_tmp'
    ray_dir.mkdir()
    env = {**os.environ, 'PYTHONPATH': ROOT, 'RAY_TMPDIR': str(ray_dir), 'RAY_ADDRESS': ''}
    extra = ['--max-env-step', '100'] + (['--storage', 'search.journal'] if tool == 'tune' else ['--seeds', '0'])
    start = time.time()
    result = subprocess.run([sys.executable, '-m', 'entry.cli', tool, '-c', str(path), '--ray', '127.0.0.1:1', *extra],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode != 0 and time.time() - start < 30, result.stderr[-2000:]
    assert "could not join Ray at '127.0.0.1:1': ConnectionError: nothing answers at 127.0.0.1:1" in result.stderr
    assert "start a cluster with 'ray start --head'" in result.stderr
    assert not os.listdir(ray_dir)


def test_a_refused_token_is_named_as_the_cause():
    from entry.kit.ray_join import join_ray

    class Ray:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            raise RuntimeError("Failed to connect to GCS: InvalidAuthToken (Unauthenticated)")
    with pytest.raises(ConnectionError, match=r"could not start Ray locally: the cluster refused this driver's "
                                              r"token .*RAY_AUTH_TOKEN"):
        join_ray(Ray, 'local')


def test_a_bench_suite_on_the_cluster_moves_a_lost_nodes_run_and_finishes(cluster, tmp_path, capsys):
    """``ding_lite bench --ray``: two configs as tasks on 1-CPU nodes; the node of the first is removed once its run
    has a resume point, and its task runs again elsewhere, continuing from there."""
    from entry.tools.bench import Entry, bench
    _three_worker_nodes(cluster)
    configs = []
    for name in ('first', 'second'):
        main, create = _tiny(tmp_path, name)
        main.pop('parallel')
        path = tmp_path / f'{name}_config.py'
        path.write_text(f"main_config = {dict(main)!r}\ncreate_config = {dict(create)!r}\n")
        configs.append(Entry(str(path), name, 1500))
    out, done = tmp_path / 'out', threading.Event()
    lost = {}

    def remove_first_node() -> None:
        tries, latest = out / 'first' / 'tries.json', out / 'first' / 'first_seed0' / 'ckpt' / 'latest'
        while not done.is_set() and not (tries.exists() and latest.exists()):
            time.sleep(0.1)
        if not done.is_set():
            node_id = json.load(open(tries))[0]['node']
            node = next(n for n in cluster.worker_nodes if n.node_id == node_id)
            lost['node'] = node_id
            cluster.remove_node(node)

    remover = threading.Thread(target=remove_first_node, daemon=True)
    remover.start()
    try:
        rows = bench(configs, [0], str(out), ray=cluster.address)
    finally:
        done.set()
        remover.join(30)
    assert lost, "the first run finished before its node could be removed"
    assert [r['config'] for r in rows] == ['first', 'second']
    record = json.load(open(out / 'first' / 'bench.json'))
    assert record['nodes'][0] == lost['node'] and len(set(record['nodes'])) == 2  # it moved, and finished
    assert 'first finished: moved after a lost node' in capsys.readouterr().out
    assert int(open(out / 'first' / 'first_seed0' / 'log' / 'evaluator.csv').read().splitlines()[-1].split(',')[1]) \
        >= 1500


def test_a_search_on_the_cluster_counts_every_trial_once_when_a_node_is_lost(cluster, tmp_path):
    """``tune --ray``: three tasks on 1-CPU nodes; the node of a running trial is removed mid-run; its task runs
    again elsewhere, fails the trials it left running (marked interrupted) and asks their parameters again: the
    study ends with n_trials counted, none lost or twice."""
    optuna = pytest.importorskip('optuna')
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from entry.pipeline.tune import tune
    _three_worker_nodes(cluster)
    main, create = _tiny(tmp_path, 'search')
    main.pop('parallel')
    journal, done, lost = str(tmp_path / 'search.journal'), threading.Event(), {}

    def remove_a_running_trials_node() -> None:
        while not done.is_set():
            time.sleep(0.2)
            if not os.path.exists(journal):
                continue
            study = optuna.load_study(study_name='search_tune', storage=JournalStorage(JournalFileBackend(journal)))
            started = [t for t in study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
                       if t.user_attrs.get('node') and
                       (tmp_path / 'search_tune' / f'trial_{t.number}' / 'log' / 'evaluator.csv').exists()]
            if started:
                lost['node'] = started[0].user_attrs['node']
                cluster.remove_node(next(n for n in cluster.worker_nodes if n.node_id == lost['node']))
                return

    remover = threading.Thread(target=remove_a_running_trials_node, daemon=True)
    remover.start()
    try:
        study = tune((main, create), 1200, n_trials=6, stack=2, ray=cluster.address, storage=journal)
    finally:
        done.set()
        remover.join(30)
    assert lost, "the search ended before a node could be removed"
    trials = study.trials
    interrupted = [t for t in trials if t.user_attrs.get('interrupted')]  # those the lost node was running
    assert interrupted and all(t.user_attrs['node'] == lost['node'] for t in interrupted)
    assert all(t.state == optuna.trial.TrialState.FAIL for t in interrupted)
    counted = [t for t in trials if t.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)]
    surplus = [t for t in trials if t.user_attrs.get('surplus')]  # asked at once past n_trials: given back unrun
    assert len(counted) == 6 and len(counted) + len(interrupted) + len(surplus) == len(trials)
    again = [t.params for t in counted]
    assert all(t.params in again for t in interrupted)  # asked again, and run to the end

