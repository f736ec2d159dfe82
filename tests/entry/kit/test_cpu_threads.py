"""torch's threads while training: one for small nets, the free cores for large ones, following the machine's load."""
from __future__ import annotations

import copy

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import compile_config
from entry.kit.cpu_threads import CpuThreads, small_nets, threads_for
from tests.conftest import TINY_CREATE, TINY_PENDULUM, zoo_config


def _cfg(**model) -> EasyDict:
    model = dict(dict(obs_shape=3, action_shape=1), **model)
    main = dict(TINY_PENDULUM, policy=dict(TINY_PENDULUM['policy'], model=model))
    return compile_config(main, create_cfg=TINY_CREATE, save_cfg=False)


def test_small_nets_are_pendulums_not_halfcheetahs_nor_images(tmp_path):
    assert small_nets(compile_config(*zoo_config('pendulum_sac_config', tmp_path / 'p'), save_cfg=False))
    assert not small_nets(compile_config(*zoo_config('halfcheetah_sac_config', tmp_path / 'h'), save_cfg=False))
    assert not small_nets(_cfg(obs_shape=[3, 36, 36]))


def test_threads_are_the_cores_others_leave_free():
    assert threads_for(2, others_busy=0.1, reserved_cpus=0, limit=2) == 2
    assert threads_for(2, others_busy=0.7, reserved_cpus=0, limit=2) == 1  # one busy process beside a 2-thread run
    assert threads_for(2, others_busy=2.0, reserved_cpus=1, limit=2) == 1  # never below one
    assert threads_for(16, others_busy=3.4, reserved_cpus=2, limit=8) == 8


def test_large_nets_follow_the_load_and_a_set_key_or_small_nets_stay_put(monkeypatch):
    large = _cfg(actor_head_hidden_size=256, critic_head_hidden_size=256)
    large.policy.learn.batch_size = 256
    readings = iter([(0.0, 0.0, 0.0), (1.8, 1.0, 1.0), (3.8, 2.0, 2.0)])  # (cores busy s, ours s, wall s)
    monkeypatch.setattr(CpuThreads, '_reading', lambda self: next(readings))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        threads = CpuThreads(large, cores=[0, 1])
        assert threads.adaptive and threads.threads == 2
        assert threads.check() == 1  # others used 0.8 of a core: one left
        assert threads.check() == 1 and torch.get_num_threads() == 1
        large.policy.learn.learner.num_threads = 3
        for cfg, expected in ((_cfg(), 1), (large, 3)):
            readings = iter([(0.0, 0.0, 0.0), (2.0, 0.0, 1.0)])  # the other process holds both cores: no matter
            fixed = CpuThreads(cfg, cores=[0, 1])
            assert not fixed.adaptive and fixed.check() == expected == fixed.threads
    finally:
        torch.set_num_threads(before)


def test_auto_overlap_where_the_learner_leaves_a_core_free(monkeypatch):
    import pytest
    from ding_lite.config import ConfigError
    from entry.kit.cpu_threads import overlap_collection
    monkeypatch.setattr('os.sched_getaffinity', lambda pid: {0, 1})
    small, large = _cfg(), _cfg(actor_head_hidden_size=256, critic_head_hidden_size=256)
    large.policy.learn.batch_size = 256
    for cfg in (small, large):
        cfg.policy.collect.overlap = 'auto'
    assert overlap_collection(small) == 'process' and not overlap_collection(large)  # a 2-thread learner: both cores
    large.policy.device = 'cuda'
    assert overlap_collection(large) == 'stream'     # a GPU learner: in this process, the GPU's work queued behind
    large.policy.collect.overlap = True
    assert overlap_collection(large) == 'stream'
    large.policy.collect.overlap = 'process'
    assert overlap_collection(large) == 'process'    # asked for by name
    small.env.manager.type = 'subprocess'
    assert not overlap_collection(small)                                  # only the base manager's envs fork
    monkeypatch.setattr('os.sched_getaffinity', lambda pid: {0})
    small.env.manager.type = 'base'
    assert not overlap_collection(small)                                  # one core: nothing to overlap on
    small.policy.collect.overlap = 'yes'
    with pytest.raises(ConfigError, match="policy.collect.overlap must be one of True, False, 'auto', 'process', "
                                          "'stream', got 'yes'"):
        overlap_collection(small)


@pytest.mark.parametrize('num_threads', [None, 2])
def test_offline_learns_on_the_thread_rule_of_every_pipeline(tmp_path, monkeypatch, num_threads):
    """Small nets learn on one thread (beside a busy core many stall every op), and a set num_threads is honoured."""
    from entry import serial_pipeline_offline
    from policy_zoo import SACPolicy
    from tests.conftest import synthetic_demo
    seen, update = [], SACPolicy._update
    monkeypatch.setattr(SACPolicy, '_update', lambda self, batch: seen.append(torch.get_num_threads()) or
                        update(self, batch))
    main, create = copy.deepcopy(TINY_PENDULUM), copy.deepcopy(TINY_CREATE)
    main['exp_name'] = str(tmp_path / 'offline')
    main['policy']['learn'].update(data_path=synthetic_demo(tmp_path / 'demo.pt'),
                                   learner=dict(num_threads=num_threads))
    torch.set_num_threads(3)
    serial_pipeline_offline((main, create), seed=0, max_train_iter=4)
    assert seen == [num_threads or 1] * 4


def test_overlap_takes_its_named_forms_in_a_config_and_refuses_others():
    from ding_lite.config import ConfigError
    for name in ('auto', 'process', 'stream'):
        main = dict(TINY_PENDULUM, policy=dict(TINY_PENDULUM['policy'], collect=dict(n_sample=4, overlap=name)))
        assert compile_config(main, create_cfg=TINY_CREATE, save_cfg=False).policy.collect.overlap == name
    main = dict(TINY_PENDULUM, policy=dict(TINY_PENDULUM['policy'], collect=dict(n_sample=4, overlap='threads')))
    with pytest.raises(ConfigError, match="'policy.collect.overlap' must be a bool or one of 'auto', 'process', "
                                          "'stream', got 'threads'"):
        compile_config(main, create_cfg=TINY_CREATE, save_cfg=False)
