"""Columnar as a user runs it: the tests of ``tests.ding_lite.test_columnar`` that train or load through ``entry`` (the
core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import copy
from functools import partial

import numpy as np
import pytest
import torch

from ding_lite.worker import SampleSerialCollector
from ding_lite.worker.collect_round import SeedBatches, StepsTogether, collect_batches
from envs import PendulumEnv, create_env_manager
from policy_zoo import SACPolicy
from tests.ding_lite.test_columnar import _Crashing, _sac


def test_collectors_stepped_together_survive_a_restarted_env(tiny_pendulum):
    """Two seeds' collectors through one forward per env step (``collect_batches`` with ``SeedAxis.act``): where a
    restarted env leaves one seed short of ``n_sample``, that seed steps on alone, the other padded out of the
    forward, and each ends with its own rows."""
    from ding_lite.worker.collect_round import collect_batches
    from entry.pipeline.seed_axis import SeedAxis
    cfg, _ = _sac(tiny_pendulum)
    policies = [SACPolicy(cfg.policy) for _ in range(2)]
    axis = SeedAxis(policies)
    kwargs = {'env_kwargs': {'max_episode_steps': 50}}
    envs = [create_env_manager(dict(type='subprocess', retry_waiting_time=0.0), [partial(_Crashing, cfg=kwargs)] * 2),
            create_env_manager(dict(type='base'), [partial(PendulumEnv, cfg=kwargs)] * 2)]
    collectors = []
    for env, policy in zip(envs, policies):
        env.seed(0)
        collectors.append(SampleSerialCollector(cfg.policy.collect.collector, env, policy.collect_mode,
                                                exp_name=cfg.exp_name))
    acted = []

    def forward(obs, which):
        acted.append(list(which))
        full = [None, None]
        for k, o in zip(which, obs):
            full[k] = o
        return [axis.act('collect', full)[k] for k in which]
    rounds = [collect_batches(collectors, 4, forward=forward) for _ in range(2)]
    for collector in collectors:
        collector.close()
    # round 2's second step breaks seed 0's two envs (their third step): seed 0 steps once more, alone
    assert acted == [[0, 1], [0, 1], [0, 1], [0, 1], [0]]
    assert [len(batch['reward']) for batches in rounds for batch in batches] == [4, 4, 4, 4]
    assert collectors[0].env_restarts == 2 and collectors[1].env_restarts == 0


def _seed_collectors(cfg, policies, norm_reward, nan_at=None):
    """A collector per seed, two Pendulum envs each (3-step episodes), seeded by the seed; ``nan_at``: seed 1's
    envs give a NaN reward at that step of their episode (dropped: ``on_nonfinite='skip'``)."""
    collectors = []
    for k, policy in enumerate(policies):
        env_cls = partial(_NanReward, nan_at=nan_at) if nan_at is not None and k == 1 else PendulumEnv
        env_fn = partial(env_cls, cfg={'env_kwargs': {'max_episode_steps': 3}})
        env = create_env_manager(dict(type='base'), [env_fn] * 2)
        env.seed(10 * k)
        collectors.append(SampleSerialCollector(cfg.policy.collect.collector, env, policy.collect_mode,
                                                exp_name=cfg.exp_name, norm_reward=norm_reward, on_nonfinite='skip'))
    return collectors


class _NanReward(PendulumEnv):
    def __init__(self, cfg, nan_at):
        super().__init__(cfg)
        self._nan_at, self._t = nan_at, 0

    def reset(self):
        self._t = 0
        return super().reset()

    def step(self, action):
        self._t += 1
        step = super().step(action)
        return step._replace(reward=np.float32('nan')) if self._t == self._nan_at else step


@pytest.mark.parametrize('norm_reward, nan_at', [(False, None), (True, None), (False, 3)])
def test_seeds_steps_counted_together_are_each_collectors_own(tiny_pendulum, norm_reward, nan_at):
    """Three seeds' collectors over 6 rounds of 4 transitions (two env steps of two envs; episodes end in rounds):
    counted together (``StepsTogether``: one pass over the seeds' columns) or each on its own, the batches are the
    same bit for bit, and so are the finished episodes (returns, discounted returns, lengths), env steps, dropped
    transitions, running returns and unfinished totals. A round taken together comes as rows of one tensor per field
    (``SeedBatches``); a step where one seed's env gave a NaN is counted by each collector (the NaN dropped)."""
    cfg, _ = _sac(tiny_pendulum)
    torch.manual_seed(0)
    policies = [SACPolicy(cfg.policy) for _ in range(3)]
    results = []
    for together in (True, False):
        collectors = _seed_collectors(cfg, [copy.deepcopy(p) for p in policies], norm_reward, nan_at)
        steps_together = StepsTogether(collectors) if together else None
        rounds = []
        for r in range(6):
            torch.manual_seed(r)
            rounds.append(collect_batches(collectors, 4, together=steps_together))
        results.append((rounds, [(c.finished_episodes, c.envstep, c.nonfinite_dropped, c.state_dict()['return'],
                                  c.state_dict()['running_return'], c.state_dict()['length']) for c in collectors]))
        for collector in collectors:
            collector.close()
    (joint, joint_counts), (apart, apart_counts) = results
    assert joint_counts == apart_counts and all(episodes for episodes, *_ in joint_counts)
    for joint_round, apart_round in zip(joint, apart):
        for a, b in zip(joint_round, apart_round):
            assert a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)
    stacked = [isinstance(batches, SeedBatches) for batches in joint]
    assert stacked == [True] * 6 if nan_at is None else (any(stacked) and not all(stacked))
    if nan_at is not None:
        assert joint_counts[1][2] > 0  # seed 1 dropped its NaN steps
    if norm_reward:
        assert 'running_return' in joint[0][0]
