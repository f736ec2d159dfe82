"""Columnar as a user runs it: the tests of ``tests.ding_lite.test_columnar`` that train or load through ``entry`` (the
core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

from functools import partial

from ding_lite.worker import SampleSerialCollector
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
