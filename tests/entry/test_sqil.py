from __future__ import annotations

import copy
import os
import subprocess

import pytest
import torch

from ding_lite.config import ConfigError
from ding_lite.data import ReplayBuffer, load_demo
from ding_lite.registry import POLICY_REGISTRY
from entry import collect_demo_data, serial_pipeline_sqil
from ding_lite.data import mixed_sampler
from policy_zoo import SACPolicy, SQILSACPolicy
from tests.conftest import first_envstep_reaching, zoo_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


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
    from ding_lite.config import compile_config
    main, create = tiny_pendulum
    create.policy.type = 'sqil_sac'
    main.policy.learn.monitor_cos = True
    cfg = compile_config(main, create_cfg=create, save_cfg=False)
    policy = SQILSACPolicy(cfg.policy)
    assert isinstance(policy, SACPolicy) and POLICY_REGISTRY.get('sqil_sac') is SQILSACPolicy
    batch = mixed_sampler([(_filled(0.0), 0.5), (_filled(0.0), 0.5)], rewards=(0.0, 1.0))(16)
    prepared = policy._preprocess_learn(batch)
    torch.manual_seed(0)
    policy._critic_td(prepared)                       # the cos monitor's pass draws first
    td = policy._critic_td(prepared)[0].abs().mean(0)
    torch.manual_seed(0)
    stats = policy.learn_mode.forward(batch)
    torch.testing.assert_close(stats['agent_td_error'], td[:8].mean())
    torch.testing.assert_close(stats['expert_td_error'], td[8:].mean())
    assert -1.0 <= stats['grad_cos'].item() <= 1.0
    assert {'agent_td_error', 'expert_td_error', 'grad_cos'} <= set(policy.learn_mode.monitor_vars())


class RecordingSAC(SQILSACPolicy):
    batches: list = []

    def _forward_learn(self, data):
        RecordingSAC.batches.append(data)
        return super()._forward_learn(data)


def test_pipeline_feeds_half_half_batches(pendulum_expert, tiny_pendulum):
    POLICY_REGISTRY.register('recording_sqil_sac', RecordingSAC, force_overwrite=True)
    main, create = tiny_pendulum
    main.env.pop('env_kwargs')  # the demonstrations came from the full-length env
    main.policy.model.update(actor_head_hidden_size=128, critic_head_hidden_size=128)
    create.policy.type = 'recording_sqil_sac'
    serial_pipeline_sqil((main, create), seed=0, expert_data_path=pendulum_expert.demo, max_env_step=120)
    assert RecordingSAC.batches
    for batch in RecordingSAC.batches:
        assert batch.reward.tolist() == [0.0] * 8 + [1.0] * 8
    POLICY_REGISTRY._table.pop('recording_sqil_sac')


def test_sqil_sac_learns_pendulum_from_demonstrations(pendulum_expert, tmp_path):
    demo = pendulum_expert.demo
    header = load_demo(demo)[1]
    assert header['count'] == 10_000 and header['env_id'] == 'Pendulum-v1' and header['return_mean'] > -250
    main, create = zoo_config('pendulum_sqil_sac_config', tmp_path / 'sqil')
    serial_pipeline_sqil((main, create), seed=0, expert_data_path=demo, max_env_step=40_000)
    steps = first_envstep_reaching(tmp_path / 'sqil' / 'log' / 'evaluator.csv', -250)
    assert steps is not None and steps <= 40_000


def test_online_expert_the_di_engine_way(pendulum_expert, tiny_pendulum):
    ckpt = pendulum_expert.ckpt
    main, create = tiny_pendulum
    main.env.pop('env_kwargs')
    main.policy.model.update(actor_head_hidden_size=128, critic_head_hidden_size=128)
    expert_main = copy.deepcopy(main)
    expert_main.policy.collect.model_path = ckpt
    create.policy.type = 'sqil_sac'
    policy = serial_pipeline_sqil((main, create), expert_cfg=(expert_main, copy.deepcopy(create)), max_env_step=120)
    assert isinstance(policy, SQILSACPolicy)
    expert_main.policy.collect.model_path = None
    with pytest.raises(ConfigError, match='policy.collect.model_path'):
        serial_pipeline_sqil((main, create), expert_cfg=(expert_main, create), max_env_step=10)
    with pytest.raises(ValueError, match='exactly one of expert_data_path'):
        serial_pipeline_sqil((main, create), max_env_step=10)


def test_demonstrations_for_the_wrong_env_are_rejected(pendulum_expert, tmp_path):
    main, create = zoo_config('cartpole_sqil_discrete_sac_config', tmp_path / 'wrong')
    with pytest.raises(ValueError, match="recorded on env 'Pendulum-v1', but this run uses 'CartPole-v1'"):
        serial_pipeline_sqil((main, create), expert_data_path=pendulum_expert.demo, max_env_step=10)


def test_cli_collect_demo_then_serial_sqil(pendulum_expert, tmp_path):
    ckpt = pendulum_expert.ckpt
    cfg = os.path.join(ROOT, 'dizoo_configs', 'pendulum_sac_config.py')
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
    run = subprocess.run(['ding_lite', '-m', 'collect_demo', '-c', cfg], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and 'needs --load-path, --expert-data-path and --collect-count' in run.stderr


def test_sqil_with_discrete_sac_on_cartpole(tmp_path):
    """SQIL is a data change: the same pipeline runs discrete_sac, from a file made by collect_demo_data."""
    from ding_lite.config import compile_config
    from policy_zoo import DiscreteSACPolicy, create_policy
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
