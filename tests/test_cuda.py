"""The GPU path: serial SAC, SQIL, hybrid and parallel training on CUDA with the replay buffer on the device.

Skipped without CUDA. Checks that batches live on the device, that priorities go back without a host sync, and
that checkpoints written on the GPU load on the CPU.
"""
from __future__ import annotations

import copy

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import PrioritizedReplayBuffer
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.worker import load_checkpoint
from entry import serial_pipeline, serial_pipeline_sqil
from entry.kit.config_input import compile_run
from entry.kit.run_parts import create_run_policy
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
    main.policy.learn.cuda_graph = True                   # priorities come out of the replayed graph
    create.replay_buffer = dict(type='priority')
    policy = serial_pipeline((main, create), seed=0, max_env_step=200)
    assert not policy._update.eager and len(policy._update._graphs) == 1
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
    main.policy.other.offline_buffer.path = None           # SQIL's demonstrations are its own half of each batch
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
    rows = open(f'{main.exp_name}/log/evaluator.csv').read().splitlines()[1:]
    best = max(rows, key=lambda row: float(row.split(',')[3]))  # the first of the best: ckpt_best is written then
    assert load_checkpoint(f'{main.exp_name}/ckpt/ckpt_best.pth.tar')['last_iter'] == int(best.split(',')[0])


def _noiseless(mu, sigma):
    """The tanh-Gaussian sample at a fixed noise: eager and graphed steps then draw no random numbers."""
    return torch.tanh(mu + 0.5 * sigma), (-sigma.log() - 0.125).sum(-1)


def _cuda_policy(seed=0, fields=('learn',), policy_type='sac', **learn):
    main = dict(exp_name='unused', policy=dict(cuda=True, model=dict(obs_shape=17, action_shape=6),
                                               learn=dict(batch_size=64, **learn)))
    torch.manual_seed(seed)
    cfg = compile_config(main, create_cfg=dict(policy=dict(type=policy_type)), save_cfg=False).policy
    return POLICY_REGISTRY.build(policy_type, cfg, enable_field=list(fields))


def _cuda_batch(seed, n=64):
    g = torch.Generator(device='cuda').manual_seed(seed)
    return {'obs': torch.randn(n, 17, device='cuda', generator=g),
            'action': torch.rand(n, 6, device='cuda', generator=g) * 2 - 1,
            'reward': torch.randn(n, device='cuda', generator=g),
            'next_obs': torch.randn(n, 17, device='cuda', generator=g),
            'done': torch.rand(n, device='cuda', generator=g) < 0.1}


def _assert_same_steps(graphed, eager, seeds):
    for seed in seeds:
        expected = eager.learn_mode.forward(_cuda_batch(seed))
        stats = graphed.learn_mode.forward(_cuda_batch(seed))
        assert stats.keys() == expected.keys()
        for key in expected:
            torch.testing.assert_close(stats[key], expected[key], rtol=1e-4, atol=1e-5)
    for a, b in zip(graphed.model.parameters(), eager.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_cuda_graph_update_matches_eager(monkeypatch):
    monkeypatch.setattr('policy_zoo.sac.tanh_gaussian_sample', _noiseless)
    graphed, eager = _cuda_policy(cuda_graph=True), _cuda_policy()
    _assert_same_steps(graphed, eager, range(8))           # 3 warm-up steps, the capture, then replays
    assert not graphed._update.eager and len(graphed._update._graphs) == 1


def test_edacs_diversity_term_graphs_as_the_eager_update(monkeypatch):
    """EDAC's term (a gradient of the critics in the action, differentiated again) inside the captured update."""
    for module in ('policy_zoo.sac', 'policy_zoo.redq'):
        monkeypatch.setattr(f'{module}.tanh_gaussian_sample', _noiseless)
    graphed, eager = (_cuda_policy(policy_type='edac', cuda_graph=graph) for graph in (True, False))
    _assert_same_steps(graphed, eager, range(8))
    assert not graphed._update.eager


def test_cqls_learned_weight_steps_inside_the_captured_update():
    """CQL's Lagrange weight (``with_lagrange``) steps on every replay of the captured update, as in the eager one:
    with a threshold far below the gap each step raises it by Adam's learning rate, in both."""
    policies = []
    for graphed in (True, False):
        main = dict(exp_name='unused', policy=dict(cuda=True, model=dict(obs_shape=17, action_shape=6), learn=dict(
            batch_size=64, cuda_graph=graphed, with_lagrange=True, lagrange_thresh=1e-3, min_q_weight=5.0)))
        torch.manual_seed(0)
        cfg = compile_config(main, create_cfg=dict(policy=dict(type='cql')), save_cfg=False).policy
        policies.append(POLICY_REGISTRY.build('cql', cfg, enable_field=['learn']))
    values = [[p.learn_mode.forward(_cuda_batch(seed))['alpha_prime'].item() for seed in range(8)] for p in policies]
    assert not policies[0]._update.eager
    torch.testing.assert_close([v - 1 for v in values[0]], [v - 1 for v in values[1]], rtol=1e-2, atol=0)
    assert values[0][-1] > values[0][4] > values[0][0] > 1.0  # it moves on the replays (after the capture) too


def test_a_bf16_update_graphs_as_the_eager_bf16_one_and_fp16_steps_through_its_scaler(monkeypatch):
    monkeypatch.setattr('policy_zoo.sac.tanh_gaussian_sample', _noiseless)
    graphed, eager = _cuda_policy(cuda_graph=True, amp='bf16'), _cuda_policy(amp='bf16')
    _assert_same_steps(graphed, eager, range(8))
    assert not graphed._update.eager
    full = _cuda_policy()
    low, expected = eager.learn_mode.forward(_cuda_batch(9)), full.learn_mode.forward(_cuda_batch(9))
    assert low['critic_loss'].item() != expected['critic_loss'].item()  # bf16 really ran (and stays near)
    fp16 = _cuda_policy(amp='fp16')
    for seed in range(20):  # the scaler's scale settles within these: later steps step
        stats = fp16.learn_mode.forward(_cuda_batch(seed))
    assert torch.isfinite(stats['critic_loss']) and stats['grad_norm_critic'].item() > 0


def test_cuda_graph_replays_without_a_host_sync_and_captures_again_after_a_load(monkeypatch):
    monkeypatch.setattr('policy_zoo.sac.tanh_gaussian_sample', _noiseless)
    graphed = _cuda_policy(cuda_graph=True)
    for seed in range(4):
        graphed.learn_mode.forward(_cuda_batch(seed))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode('error')
    try:
        first = graphed.learn_mode.forward(_cuda_batch(10))
        kept = {k: v.clone() for k, v in first.items()}
        graphed.learn_mode.forward(_cuda_batch(11))
    finally:
        torch.cuda.set_sync_debug_mode('default')
    for key in kept:                                       # outputs are copies, not the graph's own memory
        torch.testing.assert_close(first[key], kept[key], rtol=0, atol=0)
    state = copy.deepcopy(graphed.learn_mode.state_dict())
    eager = _cuda_policy()
    eager.learn_mode.load_state_dict(state)
    graphed.learn_mode.load_state_dict(state)              # new optimizer state: the old graph would miss it
    assert not graphed._update._graphs
    _assert_same_steps(graphed, eager, range(20, 24))


def test_a_parameter_reset_under_a_captured_update_steps_the_fresh_weights_as_the_eager_one(monkeypatch):
    """A reset loads a fresh learn state (issue 70): the update is captured again, and its replays step the reset
    weights and optimizers as the eager update does."""
    monkeypatch.setattr('policy_zoo.sac.tanh_gaussian_sample', _noiseless)
    graphed, eager = _cuda_policy(cuda_graph=True, param_resets=[100]), _cuda_policy(param_resets=[100])
    _assert_same_steps(graphed, eager, range(6))           # captured, then replayed
    for policy in (graphed, eager):
        torch.manual_seed(3)                               # the same fresh networks for both
        assert 'parameter reset 1 at env step 100' in policy.param_reset(100)
    assert not graphed._update._graphs
    for a, b in zip(graphed.model.parameters(), eager.model.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    _assert_same_steps(graphed, eager, range(6, 14))       # captured again: the replays step the fresh weights
    assert not graphed._update.eager and len(graphed._update._graphs) == 1


def test_cuda_graph_replays_draw_fresh_noise_and_repeat_for_a_seed(monkeypatch):
    """The RNG contract of a graphed update: every replay draws new random numbers (the captured Philox offset
    advances per replay), and the same seed gives the same sequence again. Equality with eager mode's draws is not
    promised (warm-up and capture consume the generator differently), so it is not tested."""
    from policy_zoo import sac
    real, drawn = sac.tanh_gaussian_sample, {}

    def probing(mu, sigma):  # a random probe per call, copied into one buffer that outlives each replay
        probe = drawn.setdefault(mu.shape[0], torch.zeros(4, device=mu.device))
        probe.copy_(torch.randn(4, device=mu.device))
        return real(mu, sigma)
    monkeypatch.setattr(sac, 'tanh_gaussian_sample', probing)

    def probes() -> list[torch.Tensor]:
        graphed = _cuda_policy(cuda_graph=True)
        torch.cuda.manual_seed(0)
        batch, seen = _cuda_batch(0), []
        for _ in range(7):                                 # 3 warm-up steps, the capture, then replays
            graphed.learn_mode.forward(batch)
            seen.append(drawn[64].clone())
        assert not graphed._update.eager
        return seen

    first = probes()
    assert all(not torch.equal(a, b) for a, b in zip(first[4:], first[5:]))  # each replay: new numbers
    assert all(torch.equal(a, b) for a, b in zip(first, probes()))          # the same seed: the same numbers


def test_many_seeds_on_cuda_act_and_sample_on_the_device(tiny_pendulum, monkeypatch):
    """Two seeds on the GPU: one gather from the buffers' shared tensors on the device, one forward per env step,
    and each seed's checkpoint is its own (it loads alone)."""
    from ding_lite.data.seed_buffers import SeedBuffers
    main, create = tiny_pendulum
    main.policy.cuda = True
    main.policy.other.replay_buffer.device = 'cuda'
    devices, sample = set(), SeedBuffers.sample

    def recording(self, seeds, batch_size):
        batch = sample(self, seeds, batch_size)
        devices.update(str(v.device) for v in batch.values())
        return batch
    monkeypatch.setattr(SeedBuffers, 'sample', recording)
    policies = serial_pipeline((main, create), seed=[0, 1], max_env_step=200)
    assert devices == {'cuda:0'} and all(next(p._model.parameters()).is_cuda for p in policies)
    for seed, policy in zip((0, 1), policies):
        state = load_checkpoint(f'{main.exp_name}_seed{seed}/ckpt/ckpt_last.pth.tar')
        for name, value in policy._model.state_dict().items():
            assert torch.equal(state['model'][name].cpu(), value.cpu()), name


def test_a_host_batch_pushed_to_a_cuda_buffer_arrives_unchanged_field_by_field():
    from ding_lite.data import ReplayBuffer
    data = {'obs': torch.randn(5, 3), 'action': torch.rand(5, 1), 'reward': torch.randn(5),
            'next_obs': torch.randn(5, 3), 'done': torch.tensor([True, False, False, True, False])}
    buffer = ReplayBuffer({'replay_buffer_size': 8, 'device': 'cuda', 'push_chunk': 1})
    buffer.push(data)                                   # the float fields travel packed, split again on the GPU
    for key, value in data.items():
        assert torch.equal(buffer._storage[(key,)][:5].cpu(), value)


def test_a_cuda_buffer_moves_host_rows_eight_at_a_time_and_draws_eight_batches_at_once():
    from ding_lite.data import ReplayBuffer
    buffer = ReplayBuffer({'replay_buffer_size': 32, 'device': 'cuda'})
    assert (buffer._chunk, buffer._ahead_n) == (8, 8)
    rows = [{'obs': torch.full((3,), float(i)), 'action': torch.tensor([float(i)]), 'reward': float(i),
             'next_obs': torch.full((3,), i + 1.0), 'done': False} for i in range(20)]
    for k, row in enumerate(rows):
        buffer.push([row])
        assert buffer.count() == k + 1 and buffer._count == 8 * ((k + 1) // 8)
    assert buffer.fields()[('reward',)].cpu().tolist() == list(range(20))  # in order, the waiting 4 written too
    batches = [buffer.sample(16) for _ in range(8)]
    assert len(buffer._ahead) == 0 and all(b.obs.is_cuda for b in batches)
    for b in batches:
        torch.testing.assert_close(b.obs[:, 0], b.reward)
        torch.testing.assert_close(b.next_obs[:, 0], b.reward + 1)


@pytest.mark.parametrize('graphed', [False, True])
def test_acting_from_a_snapshot_does_not_wait_for_the_learners_queued_work(tiny_pendulum, graphed):
    """``overlap='stream'``: the collect forward runs on a stream of its own from the weights of the last refresh,
    so it returns while the learner's stream is still busy (a spinning kernel queued there), and its actions are
    those of the snapshot's weights, on the host; with ``learn.cuda_graph`` replayed from a graph of it."""
    main, create = tiny_pendulum
    main.policy.cuda = True
    main.policy.learn.cuda_graph = graphed
    cfg, _ = compile_run((main, create), 0, False, None)
    policy = create_run_policy(cfg)
    policy.act_from_snapshot()
    obs = torch.randn(4, 3)
    for _ in range(5):                                     # first use: streams, pinned blocks, warm-up and capture
        policy.collect_mode.forward_batch(obs)
    if graphed:
        step = policy._snapshot._graphs[()]
        assert not step.eager and len(step._graphs) == 1
    expected = policy.eval_mode.forward_batch(obs)['action'].cpu()
    with torch.no_grad():
        for p in policy.model.actor.parameters():          # queued on the learner's stream: not in the snapshot
            p.add_(0.5)
    torch.cuda._sleep(2 ** 31)                             # about a second of the learner's stream
    output = policy.collect_mode.forward_batch(obs)
    busy = not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    assert busy and output['action'].device.type == 'cpu'
    torch.testing.assert_close(output['logit'][:, 0].tanh(), expected, rtol=1e-5, atol=1e-5)
    policy.refresh_snapshot()
    fresh = policy.collect_mode.forward_batch(obs)['logit'][:, 0].tanh()
    torch.testing.assert_close(fresh, policy.eval_mode.forward_batch(obs)['action'].cpu(), rtol=1e-5, atol=1e-5)


def test_a_stream_overlapped_run_on_cuda_learns_and_keeps_its_snapshot_in_resume_points(on_cuda):
    main, create = on_cuda
    main.policy.collect.overlap = 'stream'
    main.policy.learn.cuda_graph = True
    main.policy.learn.learner.hook.save_ckpt_after_iter = 50
    policy = serial_pipeline((main, create), seed=0, max_env_step=400)
    assert policy._snapshot is not None and not policy._update.eager
    assert DeviceCheckingSAC.sampled == DeviceCheckingSAC.devices == {'cuda:0'}
    state = load_checkpoint(f'{main.exp_name}/ckpt/ckpt_last.pth.tar')
    assert state['run']['collector']['policy']['snapshot'].keys() >= {'actor.0.0.weight'}


def test_many_seeds_share_one_captured_update_that_matches_the_eager_one(monkeypatch):
    from entry.pipeline.seed_axis import SeedAxis
    monkeypatch.setattr('policy_zoo.sac.tanh_gaussian_sample', _noiseless)
    axes = []
    for graphed in (True, False):
        torch.manual_seed(0)
        axes.append(SeedAxis([_cuda_policy(cuda_graph=graphed) for _ in range(3)]))
    graphed, eager = axes
    for seed in range(8):                                  # 3 warm-up steps, the capture, then replays
        batches = [_cuda_batch(10 * seed + k) for k in range(3)]
        got, expected = graphed.forward(batches), eager.forward(batches)  # [S, ...] per field
        assert got.keys() == expected.keys() and expected['critic_loss'].shape == (3,)
        for key in expected:
            torch.testing.assert_close(got[key], expected[key], rtol=1e-4, atol=1e-5)
    assert not graphed.lead._update.eager and len(graphed.lead._update._graphs) == 1
    for a, b in zip(graphed.lead.model.parameters(), eager.lead.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_many_seeds_act_through_captured_forwards_as_the_eager_ones():
    """With ``learn.cuda_graph`` the seeds' collect and eval forwards replay a graph each: the same actions (eval)
    and distributions (collect) as the eager axis gives, every seed its own, back on the host."""
    from entry.pipeline.seed_axis import SeedAxis
    graphed, eager = (SeedAxis([_cuda_policy(k, ('learn', 'collect', 'eval'), cuda_graph=graph) for k in range(3)])
                      for graph in (True, False))
    for step in range(6):                                  # 3 warm-up calls, the capture, then replays
        obs = [torch.randn(4, 17) for _ in range(3)]
        for mode, key in (('eval', 'action'), ('collect', 'logit')):
            got, expected = graphed.act(mode, obs), eager.act(mode, obs)
            assert all(g[key].device.type == 'cpu' for g in got)
            for g, e in zip(got, expected):
                torch.testing.assert_close(g[key], e[key], rtol=1e-4, atol=1e-5)
    assert not torch.equal(expected[0]['logit'], expected[1]['logit'])  # each seed acts with its own weights
    assert set(graphed._graphs) == {'eval', 'collect'}
    assert all(not s.eager and len(s._graphs) == 1 for s in graphed._graphs.values())


def _drawing_buffer(n=100):
    from ding_lite.data import GraphSampler, ReplayBuffer
    buffer = ReplayBuffer({'replay_buffer_size': 512, 'device': 'cuda', 'push_chunk': 1})
    buffer.push(_cuda_batch(0, n=n))
    return buffer, GraphSampler(buffer)


def test_a_batch_drawn_inside_the_captured_update_matches_the_eager_update_on_the_same_slots(monkeypatch):
    """``learn.graph_sample``: the graph draws the slots (the CUDA generator as it stands at each replay) and
    gathers them from the buffer as it stands (rows pushed after the capture too), then updates: as the eager
    update on the batch an eager draw gives at the same generator state; no host sync, nothing copied in."""
    from ding_lite.data import PrioritizedReplayBuffer
    monkeypatch.setattr('policy_zoo.sac.tanh_gaussian_sample', _noiseless)
    graphed, eager = _cuda_policy(cuda_graph=True), _cuda_policy()
    buffer, sampler = _drawing_buffer()
    assert graphed.draws_in_graph(buffer) and not eager.draws_in_graph(buffer)
    assert not graphed.draws_in_graph(PrioritizedReplayBuffer({'replay_buffer_size': 8, 'device': 'cuda'}))
    assert not _cuda_policy(cuda_graph=True, graph_sample=False).draws_in_graph(buffer)
    from ding_lite.utils.cuda_graph import Summed
    from ding_lite.worker.step_sums import StepSums
    graphed_sums, eager_sums = StepSums(), StepSums()      # the graph's sums of its statistics, against the host's
    for step in range(10):                                 # 3 warm-up steps, the capture, then replays
        if step == 6:
            buffer.push(_cuda_batch(1, n=300))             # the replays read the new count and rows
        torch.cuda.manual_seed(step)
        stats = graphed.learn_mode.forward(sampler(64))
        torch.cuda.manual_seed(step)
        expected = eager.learn_mode.forward(sampler(64).gather())
        assert stats.keys() == expected.keys() and isinstance(stats, Summed) == (step >= 3)
        for key in expected:
            torch.testing.assert_close(stats[key], expected[key], rtol=1e-4, atol=1e-5)
        graphed_sums.add(stats)
        eager_sums.add(expected)
        if step in (4, 9):                                 # a log: the next interval's sums are the graph's
            (got, count), (want, expected_count) = graphed_sums.take(), eager_sums.take()
            assert count == expected_count and got.keys() == want.keys()
            for key in want:
                torch.testing.assert_close(got[key], want[key], rtol=1e-4, atol=1e-4)
    for a, b in zip(graphed.model.parameters(), eager.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    drawn = graphed._learn_drawn
    assert not drawn.eager and len(drawn._graphs) == 1 and not next(iter(drawn._graphs.values())).inputs
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode('error')
    try:
        for _ in range(2):                                 # a step and its sums: no host sync
            graphed_sums.add(graphed.learn_mode.forward(sampler(64)))
    finally:
        torch.cuda.set_sync_debug_mode('default')


def test_a_graphed_run_that_draws_its_batches_resumes_as_the_uninterrupted_one(monkeypatch):
    """A learn state and buffer saved mid-run, loaded into a new policy and buffer: its new graph (warm-up, capture,
    replays) continues as the uninterrupted policy's replays do, draw for draw."""
    from ding_lite.data import GraphSampler, ReplayBuffer
    monkeypatch.setattr('policy_zoo.sac.tanh_gaussian_sample', _noiseless)
    straight = _cuda_policy(cuda_graph=True)
    buffer, sampler = _drawing_buffer(n=400)
    for step in range(8):
        torch.cuda.manual_seed(step)
        straight.learn_mode.forward(sampler(64))
    state, saved = copy.deepcopy(straight.learn_mode.state_dict()), buffer.state_dict()
    resumed = _cuda_policy(seed=5, cuda_graph=True)
    resumed.learn_mode.load_state_dict(state)
    loaded = ReplayBuffer({'replay_buffer_size': 512, 'device': 'cuda', 'push_chunk': 1})
    loaded.load_state_dict(saved)
    resampler = GraphSampler(loaded)
    for step in range(8, 16):
        torch.cuda.manual_seed(step)
        expected = straight.learn_mode.forward(sampler(64))
        torch.cuda.manual_seed(step)
        got = resumed.learn_mode.forward(resampler(64))
        for key in expected:
            torch.testing.assert_close(got[key], expected[key], rtol=1e-4, atol=1e-5)
    for a, b in zip(straight.model.parameters(), resumed.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert not resumed._learn_drawn.eager


def test_a_graphed_serial_run_on_cuda_draws_every_batch_inside_the_graph(tiny_pendulum, monkeypatch):
    from ding_lite.data import GraphSampler
    calls, draw = [], GraphSampler.__call__
    monkeypatch.setattr(GraphSampler, '__call__', lambda self, n: calls.append(n) or draw(self, n))
    main, create = tiny_pendulum
    main.policy.cuda, main.policy.learn.cuda_graph = True, True
    main.policy.other.replay_buffer.device = 'cuda'
    policy = serial_pipeline((main, create), seed=0, max_env_step=400)
    iterations = load_checkpoint(f'{main.exp_name}/ckpt/ckpt_last.pth.tar')['last_iter']
    assert len(calls) == iterations > 4 and not policy._learn_drawn.eager
    assert len(policy._learn_drawn._graphs) == 1 and not policy._update._graphs


def test_host_copies_that_do_not_wait_arrive_unchanged_behind_a_busy_stream():
    """``to_device`` and ``outputs_to_host`` queue their copies without a sync: with the stream busy, many copies
    each way in a row arrive as they were given (each through pinned memory of its own until it is done)."""
    from ding_lite.utils.device import outputs_to_host, to_device
    torch.cuda._sleep(2 ** 28)                             # the copies queue behind it
    sent = [to_device(torch.full((5, 3), float(k)), 'cuda') for k in range(24)]
    torch.cuda.synchronize()
    assert all(torch.equal(t.cpu(), torch.full((5, 3), float(k))) for k, t in enumerate(sent))
    torch.cuda._sleep(2 ** 28)
    back = [outputs_to_host({'a': t, 'b': [t + 1, t * 2]}, torch.cuda.current_stream().synchronize) for t in sent]
    for k, out in enumerate(back):
        assert out['a'].device.type == 'cpu' and isinstance(out['b'], list)
        assert torch.equal(out['a'], torch.full((5, 3), float(k)))
        assert torch.equal(out['b'][1], torch.full((5, 3), 2.0 * k))
