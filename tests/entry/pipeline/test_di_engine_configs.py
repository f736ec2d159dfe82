"""DI-engine's own SAC-family dizoo configs, unmodified, run through the matching ding_lite entry.

The files live in the workspace's ``shared/di_engine_dizoo/`` (``DING_LITE_DIZOO`` overrides the folder). They name
checkpoints and output files by relative paths and placeholders; each test runs in a fresh folder where those
paths exist, so the files themselves run as they are.
"""
from __future__ import annotations

import csv
import os
import pathlib

import numpy as np
import pytest

from ding_lite.config import ConfigWarning, compile_config, read_config
from ding_lite.data import load_demo
from entry import collect_demo_data, load_policy, serial_pipeline, serial_pipeline_sqil
from envs import get_vec_env_setting
from tests.conftest import ROOT, untrained_checkpoint

DIZOO = pathlib.Path(os.environ.get('DING_LITE_DIZOO', os.path.join(ROOT, '..', 'shared', 'di_engine_dizoo'))).resolve()
pytestmark = [
    pytest.mark.skipif(not DIZOO.is_dir(), reason=f"DI-engine's dizoo configs are not at {DIZOO} (they live in the "
                                                  f"workspace's shared/ folder, beside a clone; DING_LITE_DIZOO "
                                                  f"points elsewhere)"),
    pytest.mark.filterwarnings('ignore::UserWarning'),  # CUDA fallbacks, DI-engine keys, gymnasium deprecations
]
# the MuJoCo and Box2D configs (10k warm-up steps; MuJoCo's 8 evaluation episodes of 1000 steps each) run with
# pytest -m slow, for the suite's 10 minutes: the default run keeps Pendulum, CartPole and LunarLander's discrete
SLOW = ('ant', 'bipedalwalker', 'halfcheetah', 'hopper', 'lunarlander_cont', 'walker2d')
SAC = ['ant_sac_config', 'bipedalwalker_sac_config', 'cartpole_sac_config', 'halfcheetah_sac_config',
       'hopper_sac_config', 'lunarlander_cont_sac_config', 'lunarlander_discrete_sac_config', 'pendulum_sac_config',
       'walker2d_sac_config']
SQIL = {'halfcheetah_sqil_sac_config': 'halfcheetah_sac_config', 'hopper_sqil_sac_config': 'hopper_sac_config',
        'walker2d_sqil_sac_config': 'walker2d_sac_config', 'pendulum_sqil_sac_config': 'pendulum_sac_config'}


def _params(names: list[str]) -> list:
    return [pytest.param(name, marks=pytest.mark.slow) if name.startswith(SLOW) else name for name in names]
GYMNASIUM_ID = {'ant': 'Ant-v4', 'bipedalwalker': 'BipedalWalker-v3', 'cartpole': 'CartPole-v1',
                'halfcheetah': 'HalfCheetah-v5', 'hopper': 'Hopper-v5', 'lunarlander_cont': 'LunarLanderContinuous-v3',
                'lunarlander_discrete': 'LunarLander-v3', 'pendulum': 'Pendulum-v1', 'walker2d': 'Walker2d-v5'}
LEARN_STEPS = 200  # env steps of learning after each config's random warm-up (a learner log at 100)


def _path(name: str) -> str:
    return str(DIZOO / f'{name}.py')


def _warm_up(name: str) -> int:
    return compile_config(*read_config(_path(name)), save_cfg=False).policy.random_collect_size


def _untrained_checkpoint(name: str, path: pathlib.Path) -> None:
    untrained_checkpoint(read_config(_path(name)), path)


def _learned(name: str, tmp_path: pathlib.Path) -> pathlib.Path:
    """The run folder of config ``name``, checked for an evaluation, a final checkpoint and learner statistics."""
    run = tmp_path / read_config(_path(name))[0].exp_name
    assert (run / 'log' / 'evaluator.csv').is_file() and (run / 'ckpt' / 'ckpt_last.pth.tar').is_file()
    assert 'critic_loss' in (run / 'log' / 'learner.txt').read_text()  # it learned, not just collected
    return run


@pytest.mark.parametrize('name', _params(SAC))
def test_sac_config_runs_unchanged(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.warns(ConfigWarning, match='skipped DI-engine import_names'):
        policy = serial_pipeline(_path(name), seed=0, max_env_step=_warm_up(name) + LEARN_STEPS)
    run = _learned(name, tmp_path)
    main, create = read_config(str(run / 'total_config.py'))
    assert create.import_names == [] and main.policy.type == read_config(_path(name))[1].policy.type
    assert main.env.manager.type == create.env_manager.type == read_config(_path(name))[1].env_manager.type
    assert type(policy).__name__ == ('DiscreteSACPolicy' if main.env.type == 'cartpole' or 'discrete' in name
                                     else 'SACPolicy')
    env_cls, collector_cfgs, _ = get_vec_env_setting(main.env)
    env = env_cls(collector_cfgs[0])
    assert env.env_id == GYMNASIUM_ID[name[:-len('_sac_config')]]   # gym-era ids run on installed gymnasium
    env.close()


@pytest.mark.parametrize('name', _params(sorted(SQIL)))
def test_sqil_config_runs_unchanged_with_its_expert_config(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main, create = read_config(_path(name))
    model_path = tmp_path / main.policy.collect.model_path      # DI-engine reads the expert there, not in its config
    model_path.parent.mkdir(parents=True, exist_ok=True)
    _untrained_checkpoint(SQIL[name], model_path)
    serial_pipeline_sqil(_path(name), expert_cfg=_path(SQIL[name]), seed=0,
                         max_env_step=_warm_up(name) + LEARN_STEPS)
    learner_log = (_learned(name, tmp_path) / 'log' / 'learner.txt').read_text()
    assert create.policy.type != 'sqil_sac' or 'expert_td_error' in learner_log


def test_pendulum_data_generation_config_reads_its_paths(tmp_path, monkeypatch):
    """DI-engine's names: the expert at ``collect.state_dict_path``, the output at ``collect.save_path``."""
    monkeypatch.chdir(tmp_path)
    name = 'pendulum_sac_data_generation_config'
    collect = read_config(_path(name))[0].policy.collect
    (tmp_path / collect.state_dict_path).parent.mkdir(parents=True)
    _untrained_checkpoint(name, tmp_path / collect.state_dict_path)
    header = collect_demo_data(_path(name), seed=0, collect_count=300)
    batch, saved = load_demo(str(tmp_path / collect.save_path))
    assert header['count'] == saved['count'] == 300 and saved['env_id'] == 'Pendulum-v1'
    assert batch.obs.shape == (300, 3) and batch.reward.shape == (300,)


def test_hopper_data_generation_config_with_placeholder_paths(tmp_path, monkeypatch):
    """``learn.learner.load_path`` names the expert (DI-engine reads it there); the placeholders are files here."""
    monkeypatch.chdir(tmp_path)
    name = 'hopper_sac_data_generation_config'
    main = read_config(_path(name))[0]
    _untrained_checkpoint(name, tmp_path / main.policy.learn.learner.load_path)
    collect_demo_data(_path(name), seed=0, collect_count=200)
    batch, header = load_demo(str(tmp_path / main.policy.collect.save_path))
    assert header['env_id'] == 'Hopper-v5' and batch.obs.shape == (200, 11) and batch.action.shape == (200, 3)


def test_masac_config_runs_unchanged_as_discrete_masac(tmp_path, monkeypatch):
    """DI-engine's MASAC on simple_spread (5 agents, 100 cycles, 8 envs in processes, prioritized replay): one
    collect of 1600 env steps, its 50 updates, two evaluations of 8 episodes."""
    pytest.importorskip('mpe2')
    name = 'ptz_simple_spread_masac_config'
    monkeypatch.chdir(tmp_path)
    with pytest.warns(ConfigWarning, match='skipped DI-engine import_names'):
        policy = serial_pipeline(_path(name), seed=0, max_env_step=1600)
    run = _learned(name, tmp_path)
    main, create = read_config(str(run / 'total_config.py'))
    assert type(policy).__name__ == 'DiscreteMASACPolicy' and main.policy.type == 'discrete_masac'
    assert (main.policy.model.agent_obs_shape, main.policy.model.global_obs_shape) == (30, 70)
    assert create.env_manager.type == 'subprocess' and main.policy.priority
    rows = list(csv.DictReader(open(run / 'log' / 'evaluator.csv')))
    assert len(rows) == 2 and all(float(row['return_mean']) < 0 for row in rows)  # the team's return
    assert all(float(rows[-1][f'length_agent_{a}']) == 100 for a in range(5))     # and each agent's
    env_cls, _, evaluator_cfgs = get_vec_env_setting(main.env)
    env = env_cls(evaluator_cfgs[0])
    obs = env.reset()
    action = load_policy(str(run)).predict(obs)  # DI-engine's observation dict in, an action per agent out
    assert action.shape == (5,) and action.dtype == np.int64 and not env.step(action).done
    env.close()
