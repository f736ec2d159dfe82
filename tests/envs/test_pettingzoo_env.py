"""PettingZoo envs as agent slots: agents that come and go, each with its own trajectory, the team's episode counted
once, a resume that replays every agent."""
from __future__ import annotations

import re
import sys
import types
from functools import partial

import numpy as np
import pytest

from ding_lite.config import compile_config
from ding_lite.utils.default_config import ConfigError
from ding_lite.worker import EpisodeSerialCollector, InteractionSerialEvaluator, SampleSerialCollector
from envs import AgentSlots, BaseEnvManager, PettingZooEnv
from policy_zoo import SACPolicy
from tests.envs.come_and_go import B_ENDS_AT, C_JOINS_AFTER, CYCLES

ENV = 'tests.envs.come_and_go'


@pytest.fixture
def policy(tiny_pendulum):  # Pendulum's sizes are the test env's: 3 numbers observed, 1 action
    return SACPolicy(compile_config(*tiny_pendulum, save_cfg=False).policy)


def _slots(n: int = 1, seed: int = 0, dynamic: bool = True, **cfg) -> AgentSlots:
    slots = AgentSlots(BaseEnvManager([partial(PettingZooEnv, {'env_id': ENV, **cfg})] * n))
    slots.seed(seed, dynamic)
    return slots


def test_rows_follow_the_live_agents_and_no_action_reaches_one_that_is_not_live():
    env = PettingZooEnv({'env_id': ENV})
    env.seed(0)
    view = env.reset()
    assert env.agents == ['a', 'b', 'c'] and view['live'].tolist() == [True, True, False]
    lives = []
    for _ in range(CYCLES):  # the env raises on an action for 'c' before it joins or for 'b' after it ended
        timestep = env.step(np.zeros((3, 1), np.float32))
        lives.append(timestep.obs['live'].tolist())
    assert lives[C_JOINS_AFTER - 1] == [True, True, True] and lives[B_ENDS_AT - 1] == [True, False, True]
    assert timestep.done and lives[-1] == [False, False, False]
    assert timestep.info['lengths'].tolist() == [CYCLES, B_ENDS_AT, CYCLES - C_JOINS_AFTER]
    assert timestep.info['eval_episode_return'] == pytest.approx(timestep.info['returns'].sum())


def _first_episode(rows: list[dict]) -> list[dict]:
    starts = [k for k, row in enumerate(rows) if bool(row['episode_start'])] + [len(rows)]
    return rows[starts[0]:starts[1]]


@pytest.mark.parametrize('columnar, keep_ended', [(False, False), (True, False), (False, True)])
def test_each_agent_has_its_own_trajectory_that_ends_with_it(policy, columnar, keep_ended):
    """``keep_ended``: an env that keeps an ended agent in its ``agents`` list (until the episode's end)."""
    slots = _slots(env_kwargs={'keep_ended': True}) if keep_ended else _slots()
    if columnar:  # the sample collector's columns, each row named by its slot
        collector = SampleSerialCollector({'type': 'sample'}, slots, policy.collect_mode, episode_fields=True)
        batch = collector.collect_batch(n_sample=CYCLES * 3)
        rows = [{k: v[i] for k, v in batch.items()} for i in range(len(batch['reward']))]
        trajectories = [_first_episode([r for r in rows if int(r['env_id']) == slot]) for slot in range(3)]
    else:
        collector = EpisodeSerialCollector({'type': 'episode'}, slots, policy.collect_mode)
        episodes = collector.collect(n_episode=3)
        trajectories = sorted(episodes, key=lambda e: float(e[0]['obs'][1]))  # by agent index
    a, b, c = trajectories
    assert [len(a), len(b), len(c)] == [CYCLES, B_ENDS_AT, CYCLES - C_JOINS_AFTER]
    for index, trajectory in enumerate(trajectories):
        obs = np.stack([np.asarray(t['obs']) for t in trajectory])
        next_obs = np.stack([np.asarray(t['next_obs']) for t in trajectory])
        assert (obs[:, 1] == index).all() and (next_obs[:, 1] == index).all()  # nothing crosses agents
        assert np.array_equal(obs[1:], next_obs[:-1])  # one chain, from its first observation to its last
    assert float(c[0]['obs'][0]) == pytest.approx(C_JOINS_AFTER / CYCLES)  # joined after step 3, acted from step 4
    assert bool(b[-1]['done']) and not bool(a[-1]['done']) and not bool(c[-1]['done'])  # terminated vs time limit
    assert not any(bool(t['done']) for t in a[:-1] + b[:-1] + c[:-1])
    (team,) = [e for e in collector.finished_episodes]
    assert team['length'] == CYCLES and (team['length_a'], team['length_b'], team['length_c']) == (10, 4, 7)
    assert team['return'] == pytest.approx(team['return_a'] + team['return_b'] + team['return_c'])
    assert team['return_b'] == pytest.approx(sum(float(t['reward']) for t in b))


def test_the_evaluator_counts_a_team_episode_once_with_each_agent_beside_it(policy):
    evaluator = InteractionSerialEvaluator({'n_episode': 3}, _slots(2, dynamic=False), policy.eval_mode,
                                           exp_name=None)
    returns = evaluator.run_episodes()
    assert len(returns) == 3 and len(evaluator.episode_metrics) == 3
    for value, metrics in zip(returns, evaluator.episode_metrics):
        assert value == pytest.approx(metrics['return_a'] + metrics['return_b'] + metrics['return_c'])
        assert (metrics['length_a'], metrics['length_b'], metrics['length_c']) == (10, 4, 7)


def test_a_resume_replays_every_agent_mid_episode(policy):
    slots = _slots(2, seed=5)
    slots.launch()
    for _ in range(C_JOINS_AFTER + 2):  # 'c' joined, 'b' ended
        ready = slots.ready_obs
        slots.step({slot: np.full(1, 0.1 * slot, np.float32) for slot in ready})
    state, before = slots.state_dict(), slots.ready_obs
    resumed = _slots(2, seed=5)
    resumed.load_state_dict(state)
    after = resumed.ready_obs
    assert sorted(after) == sorted(before) == [0, 2, 3, 5]
    assert all(np.array_equal(after[k], before[k]) for k in before)


def test_agent_index_input_and_refusals(tmp_path):
    env = PettingZooEnv({'env_id': ENV, 'agent_id_input': True})
    env.seed(0)
    assert env.observation_space.shape == (6,) and env.reset()['obs'][1, 3:].tolist() == [0, 1, 0]
    with pytest.raises(ConfigError, match='needs env.env_id'):
        PettingZooEnv({})
    sys.modules['_no_parallel'] = types.ModuleType('_no_parallel')
    with pytest.raises(ConfigError, match='neither parallel_env'):
        PettingZooEnv({'env_id': '_no_parallel'})
    cfg = dict(exp_name=str(tmp_path), env=dict(env_id='Pendulum-v1'), policy=dict(model=dict(agent_id_input=True)))
    with pytest.raises(ConfigError, match='has no agents'):
        compile_config(cfg, create_cfg=dict(env=dict(type='gymnasium'), policy=dict(type='sac')), save_cfg=False)


def test_an_aec_env_runs_through_aec_to_parallel():
    mpe = pytest.importorskip('mpe2.simple_spread_v3')
    module = types.ModuleType('_aec_only')
    module.env = mpe.env
    sys.modules['_aec_only'] = module
    env = PettingZooEnv({'env_id': '_aec_only', 'env_kwargs': {'N': 2, 'max_cycles': 3, 'continuous_actions': True}})
    env.seed(1)
    assert env.agents == ['agent_0', 'agent_1'] and env.reset()['live'].all()
    steps = [env.step(np.zeros((2, 5), np.float32)) for _ in range(3)]
    assert [s.done for s in steps] == [False, False, True] and steps[-1].info['truncated'].all()


@pytest.mark.parametrize('env_id, kwargs, message', [
    ('mpe2.simple_sprad_v3', {}, r"env.env_id='mpe2.simple_sprad_v3': no module of that name; did you mean "
                                 r"'mpe2.simple_spread_v3'\?"),
    ('mpe2.simple_spread_v3', {'max_cycels': 5}, r"env.env_kwargs=\{'max_cycels': 5\}: env 'mpe2.simple_spread_v3' "
                                                 r"refused them \(.*max_cycels.*\); give the keywords its "
                                                 r"parallel_env\(\) takes"),
])
def test_a_misspelt_module_or_keyword_is_named_with_the_env(env_id, kwargs, message):
    """A PettingZoo module id gets a did-you-mean (not 'listed in import_names'), a keyword typo names the env and the
    key (not a bare TypeError)."""
    pytest.importorskip('mpe2')
    from ding_lite.utils.default_config import ConfigError
    from envs.pettingzoo_env import make_parallel_env
    with pytest.raises(ConfigError, match=message):
        make_parallel_env(env_id, kwargs)


def test_image_observations_are_refused_with_the_fix_and_train_through_wrappers(tmp_path):
    """pistonball's kind of env: images are refused naming env.wrappers (SuperSuit's), and a wrapper of the user's
    own (a function of the parallel env, by import path, with its keywords) shrinks them into vectors that train."""
    from entry import serial_pipeline
    from tests.conftest import TINY_PENDULUM
    with pytest.raises(ConfigError, match=r"observations are images \({'left': \(3, 12, 12\).*env.wrappers.*"
                                          r"supersuit.*resize_v1"):
        PettingZooEnv({'env_id': 'tests.envs.image_agents'})
    if not _has('supersuit'):  # a short name is SuperSuit's
        with pytest.raises(ConfigError, match=r"cannot import wrapper 'resize_v1'.*pip install supersuit"):
            PettingZooEnv({'env_id': 'tests.envs.image_agents', 'wrappers': ['resize_v1']})
    env = PettingZooEnv({'env_id': 'tests.envs.image_agents',
                         'wrappers': [dict(type='tests.envs.image_agents.shrink', pool=3)]})
    env.seed(0)
    assert env.observation_space.shape == (16,) and env.reset()['obs'].shape == (2, 16)
    main = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'images'))
    main['env'] = dict(collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=1, stop_value=1e9,
                       env_id='tests.envs.image_agents', wrappers=[dict(type='tests.envs.image_agents.shrink')])
    main['policy'] = {**main['policy'], 'model': dict(actor_head_hidden_size=16, critic_head_hidden_size=16)}
    create = dict(env=dict(type='pettingzoo_agents'), env_manager=dict(type='base'), policy=dict(type='sac'))
    policy = serial_pipeline((main, create), seed=0, max_train_iter=20)
    assert policy._cfg.model.obs_shape == 16 and (tmp_path / 'images' / 'log' / 'evaluator.csv').is_file()


def _has(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


def _adversary_config(tmp_path, **evaluator):
    import pprint
    from tests.conftest import TINY_PENDULUM
    main = dict(TINY_PENDULUM, exp_name='adversary')
    main['env'] = dict(collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=1, stop_value=1e9,
                       env_id='mpe2.simple_adversary_v3', env_kwargs=dict(max_cycles=5, continuous_actions=True))
    main['policy'] = {**main['policy'], 'model': dict(actor_head_hidden_size=16, critic_head_hidden_size=16),
                      'eval': dict(evaluator=dict(eval_freq=10, **evaluator))}
    create = dict(env=dict(type='pettingzoo_agents'), env_manager=dict(type='base'), policy=dict(type='sac'))
    path = tmp_path / 'adversary_config.py'
    path.write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(create)}\n")
    return str(path)


def test_eval_of_a_competitive_env_gives_each_agents_and_teams_return_and_stop_on_names_one(tmp_path):
    """simple_adversary through the CLI: ``-m eval`` prints each agent's return and each team's (adversary against
    the good agents), not only their sum; ``evaluator.stop_on`` with a typo is refused before anything runs."""
    import csv
    import subprocess
    pytest.importorskip('mpe2')
    config = _adversary_config(tmp_path)
    ran = subprocess.run(['ding_lite', '-m', 'serial', '-c', config, '-s', '0', '--max-train-iter', '10'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    row = list(csv.DictReader(open(tmp_path / 'adversary' / 'log' / 'evaluator.csv')))[-1]
    teams = float(row['return_team_adversary']) + float(row['return_team_agent'])
    assert teams == pytest.approx(float(row['return_mean']), abs=1e-3)
    assert float(row['return_team_agent']) == pytest.approx(float(row['return_agent_0']) + float(row['return_agent_1']),
                                                            abs=1e-3)
    run = tmp_path / 'adversary'
    ran = subprocess.run(['ding_lite', '-m', 'eval', '-c', str(run / 'total_config.py'), '--load-path',
                          str(run / 'ckpt' / 'ckpt_best.pth.tar'), '--episodes', '2'], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert re.search(r"per agent: adversary_0 -?[\d.]+, agent_0 -?[\d.]+, agent_1 -?[\d.]+", ran.stdout), ran.stdout
    assert re.search(r"per team: adversary -?[\d.]+, agent -?[\d.]+", ran.stdout), ran.stdout
    ran = subprocess.run(['ding_lite', '-m', 'serial', '-c', config, '-s', '0', '--max-train-iter', '10', '--set',
                          "policy.eval.evaluator.stop_on='adversry'", '--set', 'exp_name=typo'], capture_output=True,
                         text=True, cwd=tmp_path, timeout=300)
    assert ran.returncode != 0 and "stop_on='adversry' names no agent or team" in ran.stderr
    assert "['adversary_0', 'agent_0', 'agent_1']" in ran.stderr and not (tmp_path / 'typo').exists()


def test_stop_on_a_team_reads_that_teams_return_for_the_stop_value_and_the_best_checkpoint(tmp_path):
    episodes = [{'return_adversary_0': 5.0, 'return_agent_0': -20.0, 'return_team_adversary': 5.0,
                 'return_team_agent': -20.0, 'length_adversary_0': 5, 'length_agent_0': 5}]
    saved = []
    evaluator = InteractionSerialEvaluator(dict(stop_value=4.0, stop_on='adversary'), None, None,
                                           exp_name=str(tmp_path))
    stop, info = evaluator.record([-15.0], saved.append, 0, 0, episodes)
    assert stop and evaluator.best_return == 5.0 and saved == ['ckpt_best.pth.tar']  # the sum -15 would not stop
    plain = InteractionSerialEvaluator(dict(stop_value=4.0), None, None, exp_name=str(tmp_path / 'plain'))
    assert not plain.record([-15.0], None, 0, 0, episodes)[0]
