from __future__ import annotations

import copy
import os
import subprocess

import pytest
import torch

from ding_lite.config import ConfigError, compile_config, read_config
from ding_lite.data import ReplayBuffer, load_demo, mixed_sampler
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.worker import load_checkpoint
from entry import collect_demo_data, serial_pipeline_sqil
from policy_zoo import SACPolicy, SQILSACPolicy, create_policy
from tests.conftest import ROOT, first_envstep_reaching, synthetic_demo, untrained_checkpoint, zoo_config


def _filled(reward, n=50):
    buffer = ReplayBuffer({'replay_buffer_size': 100})
    buffer.push({'obs': torch.randn(n, 3), 'action': torch.rand(n, 1), 'reward': torch.full((n,), reward),
                 'next_obs': torch.randn(n, 3), 'done': torch.zeros(n, dtype=torch.bool)})
    return buffer


def test_sqil_batches_are_half_agent_zero_half_demo_one():
    agent, demo = _filled(0.5), _filled(-3.0)
    batch = mixed_sampler([(agent, 0.5), (demo, 0.5)], rewards=(0.0, 1.0))(8)
    assert batch.reward.tolist() == [0.0] * 4 + [1.0] * 4
    assert batch.obs.shape == (8, 3)
    hybrid = mixed_sampler([(agent, 0.75), (demo, 0.25)])(8)          # real rewards kept, 6 + 2
    assert hybrid.reward.tolist() == [0.5] * 6 + [-3.0] * 2
    assert mixed_sampler([(agent, 0.5), (_filled(1.0, n=3), 0.5)])(8) is None  # not enough demonstrations yet


def test_sqil_sac_reports_each_half_and_cos_monitor(tiny_pendulum):
    main, create = tiny_pendulum
    create.policy.type = 'sqil_sac'
    main.policy.learn.monitor_cos = True
    cfg = compile_config(main, create_cfg=create, save_cfg=False)
    policy = SQILSACPolicy(cfg.policy)
    assert isinstance(policy, SACPolicy) and POLICY_REGISTRY.get('sqil_sac') is SQILSACPolicy
    batch = mixed_sampler([(_filled(0.0), 0.5), (_filled(0.0), 0.5)], rewards=(0.0, 1.0))(16)
    prepared = policy._preprocess_learn(batch)
    torch.manual_seed(0)
    monitored = policy._critic_td(prepared)[0]        # the cos monitor's pass draws first
    td = policy._critic_td(prepared)[0].abs().mean(0)
    grads = []  # each half's critic gradient, by backward() rather than the monitor's autograd.grad
    for half in monitored.chunk(2, dim=-1):
        policy._model.critic.zero_grad(set_to_none=True)
        half.pow(2).mean(-1).sum().backward(retain_graph=True)
        grads.append(torch.cat([p.grad.flatten() for p in policy._model.critic.parameters()]))
    policy._model.critic.zero_grad(set_to_none=True)
    torch.manual_seed(0)
    stats = policy.learn_mode.forward(batch)
    torch.testing.assert_close(stats['agent_td_error'], td[:8].mean())
    torch.testing.assert_close(stats['expert_td_error'], td[8:].mean())
    torch.testing.assert_close(stats['grad_cos'], torch.nn.functional.cosine_similarity(*grads, dim=0))
    assert {'agent_td_error', 'expert_td_error', 'grad_cos'} <= set(policy.learn_mode.monitor_vars())


def test_mixed_batches_never_join_devices():
    cpu, meta = _filled(0.0), ReplayBuffer({'replay_buffer_size': 10, 'device': 'meta'})
    with pytest.raises(ValueError, match="one device, got \\['cpu', 'meta'\\]"):
        mixed_sampler([(cpu, 0.5), (meta, 0.5)])


class RecordingSAC(SQILSACPolicy):
    batches: list = []

    def _forward_learn(self, data):
        RecordingSAC.batches.append(data)
        return super()._forward_learn(data)


@pytest.fixture
def recording():
    POLICY_REGISTRY.register('recording_sqil_sac', RecordingSAC, force_overwrite=True)
    RecordingSAC.batches = []
    yield RecordingSAC.batches
    POLICY_REGISTRY._table.pop('recording_sqil_sac')


def test_pipeline_feeds_half_half_batches(recording, tiny_pendulum, tmp_path):
    main, create = tiny_pendulum
    create.policy.type = 'recording_sqil_sac'
    demo = synthetic_demo(tmp_path / 'demo.pt', reward=-5.0)
    serial_pipeline_sqil((main, create), seed=0, expert_data_path=demo, max_env_step=120)
    assert recording
    demo_obs = load_demo(demo)[0].obs
    for batch in recording:
        assert batch.reward.tolist() == [0.0] * 8 + [1.0] * 8
        assert (batch.obs[8:, None] == demo_obs[None]).all(-1).any(-1).all()   # the second half: demonstrations
        assert not (batch.obs[:8, None] == demo_obs[None]).all(-1).any(-1).any()


def test_sqil_sac_learns_pendulum_from_demonstrations(pendulum_expert, tmp_path):
    """Seeds 0-4 reached -250 at 15k / 16k / 21k / 12k / 14k env steps from the seed-0 expert's demonstrations."""
    demo = pendulum_expert.demo
    header = load_demo(demo)[1]
    assert header['count'] == 10_000 and header['env_id'] == 'Pendulum-v1' and header['return_mean'] > -250
    main, create = zoo_config('pendulum_sqil_sac_config', tmp_path / 'sqil')
    serial_pipeline_sqil((main, create), seed=0, expert_data_path=demo, max_env_step=30_000)
    steps = first_envstep_reaching(tmp_path / 'sqil' / 'log' / 'evaluator.csv', -250)
    assert steps is not None and steps <= 30_000


def test_online_expert_the_di_engine_way(recording, tiny_pendulum, tmp_path, monkeypatch):
    """The checkpoint is read where DI-engine reads it (the SQIL config) or from the expert config; the expert acts
    deterministically, pre-fills ``expert_random_collect_size`` transitions, and its envs are closed."""
    from ding_lite.worker import SampleSerialCollector
    from envs import BaseEnvManager
    main, create = tiny_pendulum
    ckpt = untrained_checkpoint((main, create), tmp_path / 'expert.pth.tar')
    expert_main, expert_create = copy.deepcopy(main), copy.deepcopy(create)
    main.policy.collect.model_path = ckpt                       # DI-engine: in the SQIL config
    main.policy.expert_random_collect_size = 24
    create.policy.type = 'recording_sqil_sac'
    sizes, launched, closed = [], set(), set()
    collect, launch, close = SampleSerialCollector.collect_batch, BaseEnvManager.launch, BaseEnvManager.close
    monkeypatch.setattr(SampleSerialCollector, 'collect_batch', lambda self, n_sample, *a, **k:
                        sizes.append(n_sample) or collect(self, n_sample, *a, **k))
    monkeypatch.setattr(BaseEnvManager, 'launch', lambda self, *a: launched.add(id(self)) or launch(self, *a))
    monkeypatch.setattr(BaseEnvManager, 'close', lambda self: closed.add(id(self)) or close(self))
    policy = serial_pipeline_sqil((main, create), expert_cfg=(expert_main, expert_create), max_env_step=120)
    assert isinstance(policy, SQILSACPolicy) and sizes[:3] == [24, 40, 4]  # expert pre-fill, agent warm-up, rounds
    assert len(launched) == 3 and launched <= closed                      # agent, evaluator and expert envs
    expert = create_policy(compile_config(main, create_cfg=expert_create, save_cfg=False).policy,
                           enable_field=['eval'])
    expert.eval_mode.load_state_dict(load_checkpoint(ckpt))

    def demonstrated_by_the_expert() -> None:  # the demonstration half holds the loaded expert's greedy actions
        batch = recording[-1]
        greedy = expert.eval_mode.forward(dict(enumerate(batch.obs[8:])))
        torch.testing.assert_close(batch.action[8:], torch.stack([greedy[i]['action'] for i in range(8)]))

    demonstrated_by_the_expert()
    main.policy.collect.model_path = None
    expert_main.policy.collect.model_path = ckpt                # or in the expert config
    recording.clear()
    assert serial_pipeline_sqil((main, create), expert_cfg=(expert_main, expert_create), max_env_step=60)
    demonstrated_by_the_expert()
    expert_main.policy.collect.model_path = None
    with pytest.raises(ConfigError, match='policy.collect.model_path'):
        serial_pipeline_sqil((main, create), expert_cfg=(expert_main, create), max_env_step=10)
    with pytest.raises(ValueError, match='exactly one of expert_data_path'):
        serial_pipeline_sqil((main, create), max_env_step=10)


def test_demonstrations_for_the_wrong_env_are_rejected(tmp_path):
    main, create = zoo_config('cartpole_sqil_discrete_sac_config', tmp_path / 'wrong')
    demo = synthetic_demo(tmp_path / 'pendulum.pt', obs_dim=4, act_dim=2, discrete=True)
    with pytest.raises(ValueError, match="recorded on env 'Pendulum-v1', but this run uses 'CartPole-v1'"):
        serial_pipeline_sqil((main, create), expert_data_path=demo, max_env_step=10)


def test_cli_collect_demo_then_serial_sqil(tmp_path):
    cfg = os.path.join(ROOT, 'dizoo_configs', 'pendulum_sac_config.py')
    ckpt = untrained_checkpoint(read_config(cfg), tmp_path / 'expert.pth.tar')
    demo = tmp_path / 'demo.pt'
    run = subprocess.run(['ding_lite', '-m', 'collect_demo', '-c', cfg, '--load-path', ckpt, '--expert-data-path',
                          str(demo), '--collect-count', '400'], capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert load_demo(str(demo))[1]['count'] == 400
    sqil_cfg = os.path.join(ROOT, 'dizoo_configs', 'pendulum_sqil_sac_config.py')
    run = subprocess.run(['ding_lite', '-m', 'serial_sqil', '-c', sqil_cfg, '--expert-data-path', str(demo),
                          '--max-env-step', '1200'], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / 'pendulum_sqil_sac_seed0' / 'log' / 'evaluator.csv').is_file()
    run = subprocess.run(['ding_lite', '-m', 'collect_demo', '-c', cfg], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert run.returncode == 2 and 'needs --load-path, --expert-data-path and --collect-count' in run.stderr


def _confident_discrete_expert(main, create) -> dict:
    """A discrete SAC state whose actor picks action 1 with probability ~1 (an expert with no doubt)."""
    cfg = compile_config(main, create_cfg=create, save_cfg=False)
    expert = create_policy(cfg.policy, enable_field=['collect'])
    with torch.no_grad():
        last = expert._model.actor[-1]
        last.weight.zero_()
        last.bias.copy_(torch.tensor([-20.0, 20.0]))
    return expert.collect_mode.state_dict()


@pytest.mark.parametrize('deterministic', [True, False])
def test_discrete_expert_demonstrations_carry_no_exploration_noise(tmp_path, deterministic):
    """At the start of the eps schedule (0.95) a collect-mode expert would act uniformly 95% of the time."""
    main, create = zoo_config('cartpole_discrete_sac_config', tmp_path / 'expert')
    demo = str(tmp_path / 'demo.pt')
    collect_demo_data((main, create), seed=0, collect_count=200, expert_data_path=demo,
                      state_dict=_confident_discrete_expert(main, create), deterministic=deterministic)
    actions = load_demo(demo)[0].action
    assert actions.eq(1).all(), actions.bincount()


def test_sqil_with_discrete_sac_on_cartpole(tmp_path):
    """SQIL is a data change: the same pipeline runs discrete_sac, from a file made by collect_demo_data."""
    from policy_zoo import DiscreteSACPolicy
    main, create = zoo_config('cartpole_sqil_discrete_sac_config', tmp_path / 'cartpole_sqil')
    main.policy.collect.n_sample = 64
    cfg = compile_config(main, create_cfg=create, save_cfg=False)
    expert = create_policy(cfg.policy, enable_field=['collect'])
    demo = str(tmp_path / 'cartpole_demo.pt')
    header = collect_demo_data((main, create), seed=0, collect_count=300, expert_data_path=demo,
                               state_dict=expert.collect_mode.state_dict(), deterministic=False)
    assert header['fields']['action'] == {'shape': [], 'dtype': 'int64'} and header['env_id'] == 'CartPole-v1'
    policy = serial_pipeline_sqil((main, create), seed=0, expert_data_path=demo, max_train_iter=4)
    assert isinstance(policy, DiscreteSACPolicy)
