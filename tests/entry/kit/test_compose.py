"""What works with what: every (pipeline, feature) cell of the declarations and every pair of features that share a
pipeline, run with tiny budgets (a few learn steps, finite weights) or refused before anything is written, exactly
as the table in docs/compose.md says; the table is the declarations' own drawing."""
from __future__ import annotations

import copy
import itertools
import math
import os
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from easydict import EasyDict

from ding_lite.capabilities import CONFLICTS, FEATURES
from ding_lite.config import ConfigError, apply_overrides
from ding_lite.data import ReplayBuffer, save_demo
from entry.kit.capabilities import PIPELINES, capability_table
from tests.conftest import ROOT, TINY_PENDULUM, untrained_checkpoint

ITERATIONS = 6
# the features that need an env of their own: goals for hindsight replay, a reward vector for its heads
ENV_OF = {'her': 'goal', 'reward_vector': 'split'}
IMPLIES = {'gail': 'reward_signals', 'reward_model_schedule': 'reward_signals', 'priority_IS_weight': 'priority',
           'amp_fp16': 'amp', 'curriculum': 'environment_parameters'}
ENVS = {'pendulum': dict(type='pendulum', env_id='Pendulum-v1', obs=3, act=1, reward=()),
        'split': dict(type='pendulum_split', env_id='PendulumSplit-v1', obs=3, act=1, reward=(3,)),
        'goal': dict(type='point_goal', env_id='PointGoal-v0', obs=6, act=2, reward=()),
        # three agents that come and go, with Pendulum's sizes
        'agents': dict(type='pettingzoo', env_id='tests.envs.come_and_go', obs=3, act=1, reward=())}


def _files(folder, env: str) -> SimpleNamespace:
    """A demonstration file and a replay buffer file of random transitions of ``env``'s shapes, and an untrained
    checkpoint of its tiny SAC."""
    spec, gen, n = ENVS[env], torch.Generator().manual_seed(0), 200
    batch = {'obs': torch.randn(n, spec['obs'], generator=gen), 'action': torch.rand(n, spec['act'], generator=gen),
             'reward': -torch.rand(n, *spec['reward'], generator=gen), 'done': torch.zeros(n, dtype=torch.bool),
             'next_obs': torch.randn(n, spec['obs'], generator=gen)}
    os.makedirs(folder, exist_ok=True)
    files = SimpleNamespace(demo=os.path.join(folder, 'demo.pt'), buffer=os.path.join(folder, 'data.buffer.pth.tar'),
                            ckpt=os.path.join(folder, 'init.pth.tar'))
    save_demo(files.demo, batch, env_id=spec['env_id'])
    buffer = ReplayBuffer({'replay_buffer_size': n})
    buffer.push(batch)
    buffer.save(files.buffer)
    return files


def _base(env: str, exp_name: str) -> tuple[EasyDict, EasyDict]:
    spec = ENVS[env]
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = exp_name
    main.env.pop('env_kwargs') if env != 'pendulum' else None
    if env == 'agents':
        main.env.env_id = spec['env_id']
    main.policy.model.update(obs_shape=spec['obs'], action_shape=spec['act'])
    main.policy.eval.evaluator.eval_freq = ITERATIONS // 2
    main.policy.learn.learner.hook.update(log_show_after_iter=ITERATIONS // 2, save_ckpt_after_iter=0)
    main.parallel = dict(collector_num=1, weight_sync_interval=2)
    return main, EasyDict(env=dict(type=spec['type']), env_manager=dict(type='base'), policy=dict(type='sac'))


def _overrides(feature: str, files: SimpleNamespace) -> dict:
    """The config keys that turn ``feature`` on, as a user sets them."""
    rnd = dict(extrinsic=dict(), rnd=dict(encoding_size=8))
    return {'norm_obs': {'env.norm_obs': dict(use_norm=True)},
            'norm_reward': {'env.norm_reward': dict(use_norm=True)},
            'reward_clip': {'env.reward_clip': 1.0},
            'reward_signals': {'policy.reward_signals': rnd},
            'gail': {'policy.reward_signals': dict(extrinsic=dict(), gail=dict(demo_path=files.demo,
                                                                             encoding_size=8))},
            'reward_model_schedule': {'policy.reward_signals': rnd,
                                      'policy.learn.reward_signal_steps_per_update': 2},
            'cloning': {'policy.behavioral_cloning': dict(demo_path=files.demo, steps=100)},
            'her': {'policy.other.replay_buffer.her': dict(n_sampled_goal=2)},
            'recurrent': {'policy.model.rnn': dict(type='lstm', hidden_size=8), 'policy.collect.unroll_len': 4},
            'reward_vector': {'policy.reward_weights': [1.0, 1.0, 1.0]},
            'priority': {'policy.priority': True},
            'priority_IS_weight': {'policy.priority': True, 'policy.priority_IS_weight': True},
            'overlap': {'policy.collect.overlap': True},
            'cuda_graph': {'policy.learn.cuda_graph': True},
            'amp': {'policy.learn.amp': 'bf16'},
            'amp_fp16': {'policy.learn.amp': 'fp16'},
            'load_before_run': {'policy.learn.learner.hook.load_ckpt_before_run': f'actor@{files.ckpt}'},
            'offline_buffer': {'policy.other.offline_buffer.path': files.demo},
            'data_path': {'policy.learn.data_path': files.buffer},
            'environment_parameters': {'env.environment_parameters': {'x_init': 0.5},
                                       'env.environment_parameters_via': 'reset'},
            'curriculum': {'env.environment_parameters': {'x_init': {'curriculum': [
                {'value': 0.5, 'completion_criteria': {'measure': 'reward', 'threshold': -1e9}}, {'value': 1.0}]}},
                           'env.environment_parameters_via': 'reset'},
            'report_collected': {'policy.collect.collector.report_collected': True},
            'param_resets': {'policy.learn.param_resets': [44]},
            'agents': {}}[feature]  # (the env: _config)


def _config(tmp_path, pipeline: str, features: tuple[str, ...]) -> tuple[EasyDict, EasyDict, SimpleNamespace]:
    env = next((ENV_OF[f] for f in features if f in ENV_OF), 'agents' if 'agents' in features else 'pendulum')
    files = _files(str(tmp_path / 'files' / env), env)
    overrides = {}
    for feature in features:  # (reward signals merge: GAIL beside RND)
        for key, value in _overrides(feature, files).items():
            overrides[key] = {**overrides[key], **value} if isinstance(value, dict) and key in overrides else value
    if pipeline == 'offline':
        overrides.setdefault('policy.learn.data_path', files.buffer)
    if env == 'goal' and 'env.environment_parameters' in overrides:  # PointGoal's reset reads no options: its
        overrides.update(_as_step_size(overrides['env.environment_parameters']['x_init']))  # step_size instead
    load = overrides.pop('policy.learn.learner.hook.load_ckpt_before_run', None)
    main, create = apply_overrides(*_base(env, str(tmp_path / 'run_seed0')), overrides)
    if 'agents' in features and env != 'agents':  # a pair refused everywhere: the other's env, of many agents
        create.env.type = 'pettingzoo'
    if load is not None:  # a checkpoint of this very model to start from
        untrained_checkpoint((copy.deepcopy(main), copy.deepcopy(create)), files.ckpt)
        main.policy.learn.learner.hook.load_ckpt_before_run = load
    return main, create, files


def _as_step_size(x_init: Any) -> dict[str, Any]:
    """Pendulum's reset option ``x_init`` (a value or lessons of values) as PointGoal's make keyword ``step_size``."""
    lessons = x_init['curriculum'] if isinstance(x_init, dict) else None
    value = {'curriculum': [dict(lesson, value=lesson['value'] / 10) for lesson in lessons]} if lessons else x_init / 10
    return {'env.environment_parameters': {'step_size': value}, 'env.environment_parameters_via': 'make'}


def _run(pipeline: str, main: EasyDict, create: EasyDict, files: SimpleNamespace) -> list:
    """The pipeline's run; the policies it trained."""
    from entry import parallel_pipeline, serial_pipeline, serial_pipeline_offline, serial_pipeline_sqil, tune
    cfg = (main, create)
    if pipeline == 'tune':
        study = tune(cfg, max_env_step=60, n_trials=2, stack=2, pruner='none')
        assert all(t.state.name == 'COMPLETE' and math.isfinite(t.value) for t in study.trials), study.trials
        return []
    run = {'serial': lambda: serial_pipeline(cfg, seed=0, max_train_iter=ITERATIONS),
           'seeds': lambda: serial_pipeline(cfg, seed=[0, 1], max_train_iter=ITERATIONS),
           'offline': lambda: serial_pipeline_offline(cfg, seed=0, max_train_iter=ITERATIONS),
           'sqil': lambda: serial_pipeline_sqil(cfg, seed=0, expert_data_path=files.demo, max_train_iter=ITERATIONS),
           'parallel': lambda: parallel_pipeline(cfg, seed=0, max_train_iter=ITERATIONS)}[pipeline]()
    return run if isinstance(run, list) else [run]


def _cover(pipeline: str) -> list[tuple[str, ...]]:
    """Groups of features that work together under ``pipeline`` (one env each) such that every such pair, and
    every such feature, is in one of them: a few runs cover all pairs."""
    declared = PIPELINES[pipeline]
    works = [f for f in FEATURES if declared.cell(f)[0] != 'refused']

    def fits(group: list[str], feature: str) -> bool:
        on = {*group, feature, *[IMPLIES[f] for f in [*group, feature] if f in IMPLIES]}
        return len({ENV_OF[f] for f in on if f in ENV_OF}) <= 1 and \
            not any(pair <= on for pair in CONFLICTS) and all(f in works for f in on)
    todo = {frozenset(p) for p in itertools.combinations(works, 2) if fits([p[0]], p[1])} | \
        {frozenset([f]) for f in works}
    groups = []
    while todo:  # (in a fixed order: every test worker collects the same cases)
        group = sorted(min(todo, key=lambda pair: (-len(pair), sorted(map(works.index, pair)))), key=works.index)
        for feature in works:
            if feature not in group and fits(group, feature) and \
                    any(frozenset({feature, g}) in todo for g in group):
                group.append(feature)
        todo -= {pair for pair in todo if pair <= set(group)}
        groups.append(tuple(sorted(group, key=works.index)))
    return groups


CASES = [(p, g) for p in PIPELINES for g in _cover(p)]


def test_every_pair_that_shares_a_pipeline_is_run_together_or_refused_everywhere():
    for pipeline in PIPELINES:
        works = [f for f in FEATURES if PIPELINES[pipeline].cell(f)[0] != 'refused']
        together = {frozenset(p) for _, group in CASES if _ == pipeline for p in itertools.combinations(group, 2)}
        for pair in map(frozenset, itertools.combinations(works, 2)):
            on = pair | {IMPLIES[f] for f in pair if f in IMPLIES}
            assert pair in together or any(c <= on for c in CONFLICTS) or \
                any(PIPELINES[pipeline].cell(f)[0] == 'refused' for f in on), (pipeline, sorted(pair))


@pytest.fixture(scope='module')
def local_ray():
    """One local Ray for the parallel pipeline's runs of this module (the pipeline uses a Ray it finds running)."""
    import shutil
    import tempfile
    ray = pytest.importorskip('ray')
    folder = tempfile.mkdtemp(prefix='ding_lite_ray_')
    ray.init(num_cpus=3, include_dashboard=False, logging_level='WARNING', _temp_dir=folder)
    yield
    ray.shutdown()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize('pipeline, features', CASES, ids=['-'.join([p, *g]) for p, g in CASES])
def test_features_that_work_together_learn_a_few_steps(tmp_path, capsys, request, pipeline, features):
    if pipeline == 'parallel':
        request.getfixturevalue('local_ray')
    main, create, files = _config(tmp_path, pipeline, features)
    policies = _run(pipeline, main, create, files)
    for policy in policies:
        assert policy.learn_steps > 0 and all(torch.isfinite(p).all() for p in policy.model.parameters())
    sequential = [f for f in features if PIPELINES[pipeline].cell(f)[0] == 'one after another']
    assert bool(sequential) == ('one after another' in capsys.readouterr().out) or pipeline not in ('seeds', 'tune')


REFUSED = [(p, f) for p in PIPELINES for f in FEATURES if PIPELINES[p].cell(f)[0] == 'refused']


@pytest.mark.parametrize('pipeline, feature', REFUSED, ids=[f'{p}-{f}' for p, f in REFUSED])
def test_a_refused_feature_is_refused_before_anything_is_written(tmp_path, pipeline, feature):
    main, create, files = _config(tmp_path, pipeline, (feature,))
    keys = '|'.join(FEATURES[f].key for f in (feature, IMPLIES.get(feature)) if f)  # (the implied one may go first)
    with pytest.raises(ConfigError, match=rf"({keys}) .*with {PIPELINES[pipeline].command}: refused: "):
        _run(pipeline, main, create, files)
    assert [p.name for p in tmp_path.iterdir()] == ['files']  # no run folder, no search folder


@pytest.mark.parametrize('pair', list(CONFLICTS), ids=['-'.join(sorted(p)) for p in CONFLICTS])
def test_a_pair_refused_everywhere_is_refused_at_compile_time(tmp_path, pair):
    main, create, files = _config(tmp_path, 'serial', tuple(sorted(pair, key=list(FEATURES).index)))
    first, second = sorted(pair, key=list(FEATURES).index)
    with pytest.raises(ConfigError, match=rf"{FEATURES[first].key} .*with {FEATURES[second].key} .*refused: "):
        _run('serial', main, create, files)
    assert [p.name for p in tmp_path.iterdir()] == ['files']


def test_the_docs_table_is_the_declarations_drawing():
    page = open(os.path.join(ROOT, 'docs', 'compose.md')).read()
    begin, end = '<!-- table: drawn by `ding_lite capabilities` -->\n', '<!-- end of table -->'
    assert page[page.index(begin) + len(begin):page.index(end)] == capability_table()


def test_a_variant_supports_only_what_it_declares(tmp_path):
    """A user's subclass of SAC inherits no capability: it declares what its update is written for."""
    from ding_lite import POLICY_REGISTRY
    from ding_lite.config import compile_config
    from policy_zoo import SACPolicy

    class PlainVariant(SACPolicy):
        pass

    class DeclaringVariant(SACPolicy):
        capabilities = SACPolicy.capabilities

    main, create, _ = _config(tmp_path, 'serial', ('reward_signals',))
    try:
        for name, cls in (('plain_variant_xyz', PlainVariant), ('declaring_variant_xyz', DeclaringVariant)):
            POLICY_REGISTRY.register(name, cls)
        create.policy.type = 'plain_variant_xyz'
        with pytest.raises(ConfigError, match=r"policy.reward_signals .*with policy 'plain_variant_xyz' "
                                              r"\(PlainVariant\): its update is not written for it \(it declares: "
                                              r"none\)"):
            compile_config(main, create, save_cfg=False)
        create.policy.type = 'declaring_variant_xyz'
        assert compile_config(main, create, save_cfg=False).policy.reward_signals
    finally:
        for name in ('plain_variant_xyz', 'declaring_variant_xyz'):
            POLICY_REGISTRY._table.pop(name, None)


def test_acting_with_a_trained_run_checks_nothing_of_how_it_trained(tmp_path):
    """``eval`` and ``load_policy`` compile a run's config to act with it: a combination refused for training now
    (a run of an earlier version) still loads."""
    from ding_lite.config import compile_config
    from entry.kit.capabilities import ACTING
    main, create, _ = _config(tmp_path, 'serial', ('gail', 'norm_obs'))
    with pytest.raises(ConfigError, match='refused'):
        compile_config(main, create, save_cfg=False)
    assert compile_config(main, create, save_cfg=False, pipeline=ACTING).env.norm_obs.use_norm
