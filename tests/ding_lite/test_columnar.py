"""The collector's columnar path (``collect_batch``) and the env managers' ``step_batch``: the same samples as
``collect()`` collated, without per-transition dicts, for every manager and policy kind; and where it must not run."""
from __future__ import annotations

from functools import partial

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import default_collate
from ding_lite.worker import InteractionSerialEvaluator, SampleSerialCollector
from envs import BaseEnv, BaseEnvManager, BaseEnvTimestep, CartPoleEnv, PendulumEnv, create_env_manager
from policy_zoo import DiscreteSACPolicy, SACPolicy


def _collector(cfg, manager, policy, env_cls=PendulumEnv, env_cfg=None, n=3, steps=7):
    env_cfg = {'env_kwargs': {'max_episode_steps': steps}, **(env_cfg or {})}
    env = create_env_manager(dict(type=manager), [partial(env_cls, cfg=env_cfg)] * n)
    env.seed(5)
    return SampleSerialCollector(cfg.policy.collect.collector, env, policy.collect_mode, exp_name=cfg.exp_name)


def _both_ways(make, rounds=12, n_sample=5, policy_kwargs=None):
    """``rounds`` batches from ``collect_batch`` and from the per-transition path collated, each from a fresh,
    same-seeded run."""
    out = []
    for columnar in (True, False):
        torch.manual_seed(0)
        collector = make()
        batches = [collector.collect_batch(n_sample, policy_kwargs=policy_kwargs) if columnar else
                   default_collate(collector._collect_transitions(n_sample, policy_kwargs=policy_kwargs),
                                   as_batch=False)
                   for _ in range(rounds)]
        out.append((batches, collector.finished_episodes, collector.envstep, collector.state_dict()['return']))
        collector.close()
    return out


def _assert_same(columnar, per_env):
    for a, b in zip(columnar[0], per_env[0]):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key
    assert columnar[1:] == per_env[1:]  # episodes, env steps, unfinished returns


def _sac(tiny_pendulum):
    cfg = compile_config(*tiny_pendulum, save_cfg=False)
    return cfg, SACPolicy(cfg.policy)


@pytest.mark.parametrize('manager', ['base', 'subprocess', 'envpool'])
def test_same_samples_as_collect_for_every_manager(tiny_pendulum, manager):
    if manager == 'envpool':
        pytest.importorskip('envpool')
    cfg, _ = _sac(tiny_pendulum)
    columnar, per_env = _both_ways(lambda: _collector(cfg, manager, SACPolicy(cfg.policy)))
    _assert_same(columnar, per_env)
    assert len(columnar[1]) == 9 and columnar[2] == 12 * 6  # whole rounds of 3 envs: 24 steps, 3 episodes each
    assert not columnar[0][0]['done'].any()                    # time-limit ends bootstrap


@pytest.mark.parametrize('policy', ['sac', 'discrete_sac'])
def test_collects_list_is_cut_from_the_columns_as_the_per_transition_path_gives_it(tiny_pendulum, policy):
    """DI-engine's ``collect()`` list, made from the columnar path's arrays: the same transitions, each field of
    the same type (arrays, tensors, Python scalars), as one transition at a time."""
    cfg, _ = _sac(tiny_pendulum)
    policy_cls, env_cls = (SACPolicy, PendulumEnv) if policy == 'sac' else (DiscreteSACPolicy, CartPoleEnv)
    if policy == 'discrete_sac':
        tiny_pendulum[0].policy.model.update(obs_shape=4, action_shape=2)
        tiny_pendulum[1].policy.type = 'discrete_sac'
        cfg = compile_config(*tiny_pendulum, save_cfg=False)
    lists = []
    for path in ('collect', '_collect_transitions'):
        torch.manual_seed(0)
        collector = _collector(cfg, 'base', policy_cls(cfg.policy), env_cls)
        lists.append([t for _ in range(6) for t in getattr(collector, path)(5)])
        collector.close()
    assert len(lists[0]) == len(lists[1]) == 36  # 3 envs: two steps of 3 for each 5 samples
    for cut, one in zip(*lists):
        assert cut.keys() == one.keys()
        for key in cut:
            assert type(cut[key]) is type(one[key]), key
            assert np.array_equal(np.asarray(cut[key]), np.asarray(one[key])), key


@pytest.mark.parametrize('policy', ['sac', 'discrete_sac'])
def test_a_collect_list_collated_untouched_gives_its_columns_and_keeps_any_change(tiny_pendulum, policy):
    """``collect()``'s rows collated (or pushed) again as they came are their batch's columns, with the dtypes and
    values the rows stacked give; a changed key, a subset, a copy or a pickle takes the stacking path, and an
    in-place edit of a row's array shows in the columns."""
    import copy
    import pickle
    from ding_lite.data import ReplayBuffer
    from ding_lite.data.collate import _untouched_rows
    if policy == 'discrete_sac':
        tiny_pendulum[0].policy.model.update(obs_shape=4, action_shape=2)
        tiny_pendulum[1].policy.type = 'discrete_sac'
    tiny_pendulum[0].policy.collect.collector_logit = True
    cfg = compile_config(*tiny_pendulum, save_cfg=False)
    policy_cls, env_cls = (SACPolicy, PendulumEnv) if policy == 'sac' else (DiscreteSACPolicy, CartPoleEnv)
    collector = _collector(cfg, 'base', policy_cls(cfg.policy), env_cls)
    collector.episode_fields = True
    rows, more = collector.collect(5), collector.collect(5)
    collector.close()
    assert _untouched_rows(rows) is not None and {'logit', 'env_id', 'episode_start'} <= rows[0].keys()
    for as_batch in (False, True):
        fast, stacked = default_collate(rows, as_batch=as_batch), default_collate([dict(r) for r in rows],
                                                                                  as_batch=as_batch)
        assert set(fast.keys()) == set(stacked.keys())
        for key in stacked.keys():
            assert fast[key].dtype == stacked[key].dtype and torch.equal(fast[key], stacked[key]), key
    stored, expected = ReplayBuffer({'replay_buffer_size': 20}), ReplayBuffer({'replay_buffer_size': 20})
    stored.push(rows)
    expected.push([dict(r) for r in rows])
    assert all(torch.equal(stored.fields()[k], v) for k, v in expected.fields().items())
    rows[1]['obs'][0] = 7.0                                  # in place: the columns see it
    assert default_collate(rows, as_batch=False)['obs'][1, 0] == 7.0
    part = default_collate(rows[1:], as_batch=False)         # a subset: stacked
    assert len(part['reward']) == len(rows) - 1 and part['obs'][0, 0] == 7.0
    rows[0]['reward'] = 123.0                                # a changed value: stacked, and kept
    assert _untouched_rows(rows) is None and default_collate(rows, as_batch=False)['reward'][0] == 123.0
    for change in (lambda r: r.update(x=1), lambda r: r.pop('done'), lambda r: r.setdefault('y', 2),
                   lambda r: r.__delitem__('obs'), lambda r: r.__ior__({'z': 3}), lambda r: r.clear()):
        change(more[2])
        assert _untouched_rows(more) is None
        more[2]._source = more[0]._source                     # (as it came, for the next change)
    assert type(copy.copy(more[0])) is dict and type(pickle.loads(pickle.dumps(more[0]))) is dict


def test_logits_and_discrete_actions_with_the_eps_schedule(tiny_pendulum):
    main, create = tiny_pendulum
    main.policy.collect.collector_logit = True
    main.policy.model.update(obs_shape=4, action_shape=2)
    main.policy.other.eps = dict(type='linear', start=0.9, end=0.1, decay=30)
    cfg = compile_config(main, dict(create, policy=dict(type='discrete_sac')), save_cfg=False)
    # a fresh policy per run: the eps schedule runs on the policy's own env step count. CartPole terminates.
    columnar, per_env = _both_ways(lambda: _collector(cfg, 'base', DiscreteSACPolicy(cfg.policy), CartPoleEnv,
                                                      steps=200), rounds=30)
    _assert_same(columnar, per_env)
    batch = torch.cat([b['done'] for b in columnar[0]])
    assert set(columnar[0][0]) == {'obs', 'next_obs', 'action', 'logit', 'reward', 'done'} and batch.any()
    assert columnar[0][0]['action'].dtype == torch.int64 and columnar[0][0]['logit'].shape == (6, 2)


class _DictObs(BaseEnv):
    """Observations that do not stack into one array."""

    def __init__(self, cfg=None):
        self._t = 0

    def seed(self, seed, dynamic_seed=True):
        pass

    def reset(self):
        self._t = 0
        return {'x': np.zeros(3, np.float32)}

    def step(self, action):
        self._t += 1
        done = self._t == 4
        info = {'eval_episode_return': -1.0} if done else {}
        return BaseEnvTimestep({'x': np.full(3, self._t, np.float32)}, -0.25, done, info)

    def close(self):
        pass

    observation_space = gym.spaces.Dict({'x': gym.spaces.Box(-9, 9, (3,))})
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    reward_space = gym.spaces.Box(-1.0, 0.0, (1,), np.float32)


class _OwnTransitions(SACPolicy):
    def _process_transition(self, obs, model_output, timestep):
        return dict(super()._process_transition(obs, model_output, timestep), step_reward_x2=2 * timestep.reward)


def test_policies_with_their_own_transitions_and_unstackable_observations_go_per_env(tiny_pendulum):
    cfg, _ = _sac(tiny_pendulum)
    own = _OwnTransitions(cfg.policy)
    batch = _collector(cfg, 'base', own).collect_batch(5)
    torch.testing.assert_close(batch['step_reward_x2'], 2 * batch['reward'])
    assert own.collect_mode.plain_transition_keys is None and SACPolicy(cfg.policy).collect_mode.plain_transition_keys
    manager = BaseEnvManager([_DictObs] * 2)
    collector = SampleSerialCollector(cfg.policy.collect.collector, manager, _FirstKey(cfg.policy).collect_mode,
                                      exp_name=cfg.exp_name)
    batch = collector.collect_batch(9)
    assert batch['obs']['x'].shape == (10, 3) and batch['reward'].tolist() == [-0.25] * 10


class _FirstKey(SACPolicy):
    """SAC on ``obs['x']`` (a policy for dict observations)."""

    def _forward_collect_batch(self, obs, **kwargs):
        return super()._forward_collect_batch(obs['x'], **kwargs)


class _Crashing(PendulumEnv):
    def step(self, action):
        self._n = getattr(self, '_n', 0) + 1
        if self._n == 3:
            raise RuntimeError('boom')
        return super().step(action)


def test_a_restarted_env_gives_no_row_and_is_counted(tiny_pendulum):
    cfg, policy = _sac(tiny_pendulum)
    env = create_env_manager(dict(type='subprocess', retry_waiting_time=0.0),
                             [partial(_Crashing, cfg={'env_kwargs': {'max_episode_steps': 50}})] * 2)
    env.seed(0)
    collector = SampleSerialCollector(cfg.policy.collect.collector, env, policy.collect_mode, exp_name=cfg.exp_name)
    batches = [collector.collect_batch(2) for _ in range(3)]
    collector.close()
    # each env instance breaks on its third step: the third call steps twice, the broken step giving no rows
    assert [len(b['reward']) for b in batches] == [2, 2, 2]
    assert collector.env_restarts == 2 and collector.envstep == 6
    assert all(torch.isfinite(b['next_obs']).all() for b in batches)


def test_step_batch_columns_match_step(tiny_pendulum):
    """``step_batch`` reports what ``step`` reports: final observations, float64 rewards, done and terminated."""
    def manager():
        m = BaseEnvManager([partial(PendulumEnv, cfg={'env_kwargs': {'max_episode_steps': 3}})] * 2)
        m.seed(1)
        m.launch()
        return m
    a, b = manager(), manager()
    for k in range(4):
        action = np.full((2, 1), 0.5 - k / 4, np.float32)
        ids, obs = a.ready_obs_batch()
        assert ids == [0, 1] and np.array_equal(obs, np.stack(list(b.ready_obs.values())))
        step, timesteps = a.step_batch(ids, action), b.step(dict(zip(ids, action)))
        assert step.env_id == [0, 1] and step.reward.dtype == np.float64 and step.restarted == []
        assert np.array_equal(step.obs, np.stack([t.obs for t in timesteps.values()]))
        assert step.reward.tolist() == [float(t.reward) for t in timesteps.values()]
        assert step.done.tolist() == [k == 2] * 2 and not step.terminated.any()


def test_evaluator_batch_forward_gives_the_same_returns(tiny_pendulum):
    cfg, policy = _sac(tiny_pendulum)
    returns = []
    for batch in (True, False):
        env = BaseEnvManager([partial(PendulumEnv, cfg={'env_kwargs': {'max_episode_steps': 15}})] * 2)
        env.seed(3, dynamic_seed=False)
        mode = policy.eval_mode if batch else type(policy.eval_mode)(**dict(vars(policy.eval_mode),
                                                                           forward_batch=None))
        evaluator = InteractionSerialEvaluator({'n_episode': 5}, env, mode, exp_name=None)
        returns.append((evaluator.run_episodes(), evaluator.episode_metrics))
        evaluator.close()
    assert len(returns[0][0]) == 5 and returns[0] == returns[1]  # returns, discounted returns, reward per step


class _Shaped(PendulumEnv):
    """Changes ``step``: its envs step one by one, and the shaping reaches the samples."""

    def step(self, action):
        timestep = super().step(action)
        return timestep._replace(reward=np.float32(timestep.reward + 100.0))


class _Doubled(PendulumEnv):
    def _train_reward(self, reward):
        return 2.0 * reward


def test_step_many_keeps_what_env_types_change(tiny_pendulum):
    cfg, policy = _sac(tiny_pendulum)
    assert _Shaped.step_many([_Shaped({})], np.zeros((1, 1), np.float32)) is None
    batch = _collector(cfg, 'base', policy, _Shaped, n=2).collect_batch(6)
    assert (batch['reward'] > 80).all()                       # Pendulum's own rewards are in [-16.3, 0]
    doubled, plain = _Doubled({}), PendulumEnv({})
    for env in (doubled, plain):
        env.seed(0)
        env.reset()
    action = np.full((1, 1), 0.3, np.float32)
    assert _Doubled.step_many([doubled], action)[1][0] == pytest.approx(2 * float(plain.step(action[0]).reward))


def test_step_many_scales_each_env_into_its_own_bounds():
    """Envs of one type with different action spaces: each action is scaled into its own env's bounds."""
    from envs import GymnasiumEnv
    envs = [GymnasiumEnv({'env_id': 'Pendulum-v1'}), GymnasiumEnv({'env_id': 'MountainCarContinuous-v0'})]
    twins = [GymnasiumEnv({'env_id': 'Pendulum-v1'}), GymnasiumEnv({'env_id': 'MountainCarContinuous-v0'})]
    for env in envs + twins:
        env.seed(4)
        env.reset()
    actions = np.array([[0.5], [-0.75]], np.float32)
    obs, reward, done, terminated, _ = GymnasiumEnv.step_many(envs, actions)
    expected = [twin.step(a) for twin, a in zip(twins, actions)]
    assert all(np.array_equal(o, t.obs) for o, t in zip(obs, expected))
    assert reward.tolist() == [float(t.reward) for t in expected] and not done.any() and not terminated.any()


class _ObsAction(SACPolicy):
    """Acts with a function of the observation, so that a sample shows whether its action was the one its obs got."""

    def _forward_collect_batch(self, obs, **kwargs):
        return {'action': torch.tanh(obs[:, :1] + obs[:, 1:2])}


def test_async_envpool_pairs_each_env_with_what_it_was_sent(tiny_pendulum):
    """EnvPool async returns other envs than it was given: each sample's action is the one its obs was sent with,
    and each env's samples chain (next_obs of one is obs of the next, within an episode)."""
    pytest.importorskip('envpool')
    cfg, _ = _sac(tiny_pendulum)
    env = create_env_manager(dict(type='envpool', batch_size=2),
                             [partial(PendulumEnv, cfg={'env_kwargs': {'max_episode_steps': 9}})] * 4)
    env.seed(0)
    collector = SampleSerialCollector(cfg.policy.collect.collector, env, _ObsAction(cfg.policy).collect_mode,
                                      exp_name=cfg.exp_name)
    assert collector._columnar_keys() == ['action']
    batches = [collector.collect_batch(6) for _ in range(40)]
    batch = {k: torch.cat([b[k] for b in batches]) for k in ('obs', 'action', 'next_obs')}
    collector.close()
    torch.testing.assert_close(batch['action'], torch.tanh(batch['obs'][:, :1] + batch['obs'][:, 1:2]))
    follows = {tuple(o.tolist()) for o in batch['obs']}
    chained = sum(tuple(o.tolist()) in follows for o in batch['next_obs'])
    assert len(batch['obs']) >= 240 and chained >= 0.8 * len(batch['obs'])  # all but episode ends and the tail


class _Float64Walk(gym.Env):
    """float64 observations and rewards that float32 cannot hold exactly; the episode ends at its third step."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        self.t, self.x = 0, np.array([0.1, 1 / 3])
        return self.x.copy(), {}

    def step(self, action):
        self.t += 1
        self.x = self.x + np.array([float(action[0]), 0.1])
        return self.x.copy(), float(self.x.sum()) / 3, self.t >= 3, False, {}


def test_step_many_gives_what_each_env_step_gives_with_float64_observations():
    """Envs stepped together: the observations as float32 (one conversion for all), the float32 rewards, and each
    episode's return summed in float64 as one env's own steps sum it."""
    from envs import GymnasiumEnv
    envs, twins = ([GymnasiumEnv({}, env=_Float64Walk()) for _ in range(2)] for _ in range(2))
    for env in envs + twins:
        env.reset()
    actions = np.array([[0.3], [-0.7]], np.float32)
    for _ in range(3):
        obs, reward, done, terminated, info = GymnasiumEnv.step_many(envs, actions)
        expected = [twin.step(a) for twin, a in zip(twins, actions)]
        assert all(o.dtype == np.float32 and np.array_equal(o, t.obs) for o, t in zip(obs, expected))
        assert reward.tolist() == [float(t.reward) for t in expected]
    assert done.all() and terminated.all()
    assert [info[k]['eval_episode_return'] for k in range(2)] == [t.info['eval_episode_return'] for t in expected]
    assert [env._episode_steps for env in envs] == [3, 3]
