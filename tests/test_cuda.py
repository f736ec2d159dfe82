"""The GPU path: serial SAC, SQIL, hybrid and parallel training on CUDA with the replay buffer on the device.

Skipped without CUDA. Checks that batches live on the device, that priorities go back without a host sync, and
that checkpoints written on the GPU load on the CPU.
"""
from __future__ import annotations

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import PrioritizedReplayBuffer
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.worker import load_checkpoint
from entry import serial_pipeline, serial_pipeline_sqil
from policy_zoo import SACPolicy, SQILSACPolicy
from tests.conftest import synthetic_demo

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')


class DeviceCheckingSAC(SQILSACPolicy):
    """Records the devices of the batches it is given (``sampled``) and learns from (``devices``)."""

    sampled: set = set()
    devices: set = set()

    def _forward_learn(self, data):
        DeviceCheckingSAC.sampled |= {str(v.device) for v in (data.obs, data.action, data.reward, data.done)}
        return super()._forward_learn(data)

    def _preprocess_learn(self, data):
        batch = super()._preprocess_learn(data)
        DeviceCheckingSAC.devices |= {str(v.device) for v in (batch.obs, batch.action, batch.reward, batch.weight)}
        return batch


@pytest.fixture
def on_cuda(tiny_pendulum):
    POLICY_REGISTRY.register('device_checking_sac', DeviceCheckingSAC, force_overwrite=True)
    DeviceCheckingSAC.sampled, DeviceCheckingSAC.devices = set(), set()
    main, create = tiny_pendulum
    main.policy.cuda = True
    main.policy.other.replay_buffer.device = 'cuda'
    create.policy.type = 'device_checking_sac'
    yield main, create
    POLICY_REGISTRY._table.pop('device_checking_sac')


def test_serial_sac_on_cuda_and_checkpoint_loads_on_cpu(on_cuda):
    main, create = on_cuda
    policy = serial_pipeline((main, create), seed=0, max_env_step=300)
    assert DeviceCheckingSAC.sampled == DeviceCheckingSAC.devices == {'cuda:0'}
    assert next(policy._model.parameters()).is_cuda
    state = load_checkpoint(f'{main.exp_name}/ckpt/ckpt_last.pth.tar')
    cpu_main = dict(main, policy=dict(main.policy, cuda=False, other=dict(replay_buffer=dict(device='cpu'))))
    cpu_policy = SACPolicy(compile_config(cpu_main, create_cfg=create, save_cfg=False).policy)
    cpu_policy.learn_mode.load_state_dict(state)
    obs = {0: torch.randn(3)}
    torch.testing.assert_close(cpu_policy.eval_mode.forward(obs)[0]['action'],
                               policy.eval_mode.forward(obs)[0]['action'], rtol=1e-4, atol=1e-5)


def test_prioritized_buffer_on_cuda_updates_without_a_host_sync(on_cuda):
    main, create = on_cuda
    main.policy.update(priority=True, priority_IS_weight=True)
    create.replay_buffer = dict(type='priority')
    serial_pipeline((main, create), seed=0, max_env_step=200)
    buffer = PrioritizedReplayBuffer({'replay_buffer_size': 64, 'device': 'cuda'})
    buffer.push({'obs': torch.randn(64, 3), 'action': torch.rand(64, 1), 'reward': torch.randn(64),
                 'next_obs': torch.randn(64, 3), 'done': torch.zeros(64, dtype=torch.bool)})
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode('error')
    try:
        batch = buffer.sample(32)
        buffer.update({'replay_buffer_idx': batch.replay_buffer_idx, 'priority': batch.reward.abs() + 0.1})
    finally:
        torch.cuda.set_sync_debug_mode('default')
    assert batch.obs.is_cuda and batch.priority_IS.is_cuda and buffer._sum_tree.tree.is_cuda
    expected = (batch.reward.abs() + 0.1).double()
    assert torch.isin(buffer._priority[batch.replay_buffer_idx], expected).all()  # a duplicate takes one of its values
    torch.testing.assert_close(buffer._sum_tree[batch.replay_buffer_idx],
                               buffer._priority[batch.replay_buffer_idx] ** buffer.alpha)
    assert buffer._max_priority.item() == pytest.approx(max(1.0, expected.max().item()))


def test_learn_step_on_cuda_has_no_host_sync(on_cuda):
    main, create = on_cuda
    cfg = compile_config(main, create_cfg=create, save_cfg=False)
    policy = SACPolicy(cfg.policy)
    batch = {'obs': torch.randn(16, 3, device='cuda'), 'action': torch.rand(16, 1, device='cuda'),
             'reward': torch.randn(16, device='cuda'), 'next_obs': torch.randn(16, 3, device='cuda'),
             'done': torch.zeros(16, device='cuda')}
    policy.learn_mode.forward(dict(batch))                # warm-up: lazy CUDA init may sync once
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode('error')
    try:
        stats = policy.learn_mode.forward(dict(batch))
    finally:
        torch.cuda.set_sync_debug_mode('default')
    assert all(v.is_cuda for v in stats.values())


def test_sqil_and_hybrid_on_cuda_mix_on_the_device(on_cuda, tmp_path):
    main, create = on_cuda
    demo = synthetic_demo(tmp_path / 'demo.pt')
    policy = serial_pipeline_sqil((main, create), seed=0, expert_data_path=demo, max_env_step=300)
    assert isinstance(policy, SQILSACPolicy)
    assert DeviceCheckingSAC.sampled == DeviceCheckingSAC.devices == {'cuda:0'}   # mixed on the device
    DeviceCheckingSAC.sampled, DeviceCheckingSAC.devices = set(), set()
    main.policy.other.offline_buffer = dict(path=demo, ratio=0.5)
    main.exp_name += '_hybrid'
    serial_pipeline((main, create), seed=0, max_env_step=300)
    assert DeviceCheckingSAC.sampled == DeviceCheckingSAC.devices == {'cuda:0'}
    main.policy.other.replay_buffer.device = 'cpu'         # buffers on the CPU, learner on the GPU
    main.exp_name += '_cpu_buffer'
    DeviceCheckingSAC.sampled, DeviceCheckingSAC.devices = set(), set()
    serial_pipeline_sqil((main, create), seed=0, expert_data_path=demo, max_env_step=300)
    assert DeviceCheckingSAC.sampled == {'cpu'} and DeviceCheckingSAC.devices == {'cuda:0'}


def test_parallel_learner_and_buffer_on_cuda_actors_on_the_cpu(on_cuda):
    ray = pytest.importorskip('ray', reason='the parallel pipeline needs Ray')
    from entry import parallel_pipeline
    main, create = on_cuda
    main.policy.other.replay_buffer.device = 'cpu'         # the parallel pipeline keeps it beside the learner
    main.parallel = dict(collector_num=2)
    policy = parallel_pipeline((main, create), seed=0, max_env_step=300)
    assert DeviceCheckingSAC.sampled == DeviceCheckingSAC.devices == {'cuda:0'}
    assert next(policy.model.parameters()).is_cuda and not ray.is_initialized()
    assert load_checkpoint(f'{main.exp_name}/ckpt/ckpt_best.pth.tar')['last_iter'] >= 0  # the evaluated snapshot
