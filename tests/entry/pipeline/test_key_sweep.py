"""No setting accepted and ignored, by behaviour: every key the collector, the evaluator and the env declare, set to
another value than its default, either changes something a user sees of a tiny serial run (its logs, evaluation
rows, weights or checkpoints) or is refused naming the key. A key declared later with no row here fails the sweep."""
from __future__ import annotations

import copy
import glob
import hashlib
import os
import re

import pytest
from easydict import EasyDict

from ding_lite.config import ConfigError
from ding_lite.registry import ENV_REGISTRY, SERIAL_COLLECTOR_REGISTRY, SERIAL_EVALUATOR_REGISTRY
from entry import serial_pipeline
from tests.conftest import TINY_CREATE, TINY_PENDULUM

# key (its section's path) -> (the settings of the run it is compared with, the setting swept); a value of None in
# the third place: refused (a ConfigError or ValueError naming the key)
ENV_ROWS = {
    'collector_env_num': ({}, {'collector_env_num': 3}),
    'evaluator_env_num': ({}, {'evaluator_env_num': 3}),
    'n_evaluator_episode': ({}, {'n_evaluator_episode': 3}),
    'stop_value': ({}, {'stop_value': -1e9}),
    'norm_obs.use_norm': ({}, {'norm_obs': dict(use_norm=True)}),
    'norm_obs.clip': ({'norm_obs': dict(use_norm=True)}, {'norm_obs': dict(use_norm=True, clip=0.1)}),
    'norm_reward.use_norm': ({}, {'norm_reward': dict(use_norm=True)}),
    'norm_reward.clip': ({'norm_reward': dict(use_norm=True)}, {'norm_reward': dict(use_norm=True, clip=0.1)}),
    'reward_clip': ({}, {'reward_clip': 1.0}),
    'info_metrics': ({}, {'info_metrics': ['TimeLimit.truncated']}),
    'info_stats': ({}, {'info_stats': {'TimeLimit.truncated': 'sum'}}),
    'environment_parameters': ({}, {'environment_parameters': {'g': 4.0}}),
    'environment_parameters_via': ({'environment_parameters': {'g': 4.0}},
                                   {'environment_parameters': {'g': 4.0}, 'environment_parameters_via': 'reset'}),
    'env_id': ({}, {'env_id': 'MountainCarContinuous-v0'}),
    'act_scale': ({}, {'act_scale': False}),
    'env_kwargs': ({}, {'env_kwargs': {'max_episode_steps': 30}}),
    'wrappers': ({}, {'wrappers': ['NormalizeReward']}),
    'frame_stack': ({}, {'frame_stack': 2}),
}
COLLECTOR_ROWS = {
    'type': ({}, {'type': 'episode'}),
    'collect_print_freq': ({}, {'collect_print_freq': 5}),
    'report_collected': ({}, {'report_collected': True}),
}
EVALUATOR_ROWS = {
    'type': ({}, {'type': 'no_such_evaluator'}),
    'eval_freq': ({}, {'eval_freq': 5}),
    'n_episode': ({}, {'n_episode': 3}),
    'stop_value': ({}, {'stop_value': -1e9}),
    'stop_on': ({}, {'stop_on': 'agent_0'}),
}


def _leaves(tree: dict, prefix: str = '') -> list[str]:
    keys = []
    for key, value in tree.items():
        keys += _leaves(value, f"{prefix}{key}.") if isinstance(value, dict) and value else [f"{prefix}{key}"]
    return keys


def _declared() -> dict[str, list[str]]:
    collector = {k for name in ('sample', 'episode') for k in _leaves(SERIAL_COLLECTOR_REGISTRY.get(name).default_config())}
    return {'env': _leaves(ENV_REGISTRY.get('pendulum').default_config()),
            'collector': sorted(collector - {'get_train_sample'}),  # DI-engine's episode collector's flag, refused
            'evaluator': _leaves(SERIAL_EVALUATOR_REGISTRY.get('interaction').default_config())}


def test_every_declared_key_has_a_row():
    rows = {'env': ENV_ROWS, 'collector': COLLECTOR_ROWS, 'evaluator': EVALUATOR_ROWS}
    assert {section: sorted(keys) for section, keys in _declared().items()} == \
        {section: sorted(rows[section]) for section in rows}


def _run(tmp_path, name: str, section: str, settings: dict) -> str:
    """A tiny run with ``settings`` in ``section``: what a user sees of it (its logs less times, its evaluation
    rows less wall time, its final weights), as one digest."""
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / name)
    main.policy.model.pop('obs_shape'), main.policy.model.pop('action_shape')  # read from the env
    main.policy.learn.learner.hook.log_show_after_iter = 5
    node = {'env': main.env, 'collector': main.policy.collect.setdefault('collector', EasyDict()),
            'evaluator': main.policy.eval.evaluator}[section]
    node.update(copy.deepcopy(settings))
    serial_pipeline((main, EasyDict(copy.deepcopy(TINY_CREATE))), seed=0, max_train_iter=12)
    digest = hashlib.sha256()
    for path in sorted(glob.glob(f"{main.exp_name}/log/*.txt") + glob.glob(f"{main.exp_name}/log/*.csv")):
        text = re.sub(r'^\[[^\]]*\] ', '', open(path).read(), flags=re.M)  # timestamps
        text = re.sub(r'(?m)^(\d+,\d+),[\d.]+,', r'\1,', text)  # evaluator.csv's wall time
        text = re.sub(r'(collect|learn|eval|other|env_steps_per_s|updates_per_s): [\d.e+-]+', '', text)  # time.txt
        digest.update(f"{os.path.basename(path)}\n{text}".encode())
    digest.update(open(f"{main.exp_name}/ckpt/ckpt_last.pth.tar", 'rb').read())
    return digest.hexdigest()


@pytest.mark.parametrize('section, key', [(s, k) for s, rows in
                                          (('env', ENV_ROWS), ('collector', COLLECTOR_ROWS),
                                           ('evaluator', EVALUATOR_ROWS)) for k in rows])
def test_a_declared_key_changes_the_run_or_is_refused(tmp_path, section, key):
    base, swept = {'env': ENV_ROWS, 'collector': COLLECTOR_ROWS, 'evaluator': EVALUATOR_ROWS}[section][key]
    try:
        changed = _run(tmp_path, 'swept', section, swept)
    except (ConfigError, ValueError, KeyError) as error:  # refused: by name (KeyError: the registry's)
        assert key.split('.')[-1] in str(error) or key.split('.')[0] in str(error), str(error)
        return
    assert changed != _run(tmp_path, 'base', section, base), f"{section}.{key} was accepted and changed nothing"
