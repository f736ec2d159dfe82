"""PettingZoo envs as agent slots: agents that come and go, each with its own trajectory, the team's episode counted
once, a resume that replays every agent."""
from __future__ import annotations

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

