"""ALF's and Coach's learn options: partial checkpoint loads, optimiser knobs, reward normalisation, episode metrics."""
from __future__ import annotations

import copy
import os

import pytest
import torch

from entry import serial_pipeline
from entry.kit.config_input import compile_run
from entry.kit.life_cycle import closing
from entry.kit.steps import build_serial


def _built(main, create, seed: int = 0):
    cfg, _ = compile_run((copy.deepcopy(main), copy.deepcopy(create)), seed, False, None)
    return cfg, build_serial(cfg)


def _weights(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_partial_load_takes_the_actor_and_leaves_the_critics_as_a_fresh_init(tiny_pendulum, tmp_path):
    main, create = tiny_pendulum
    serial_pipeline((copy.deepcopy(main), create), seed=5, max_env_step=120)   # another seed: other weights
    source = torch.load(os.path.join(main.exp_name, 'ckpt', 'ckpt_last.pth.tar'), weights_only=False)
    main.exp_name = str(tmp_path / 'fresh')
    _, fresh = _built(main, create)
    with closing(fresh):
        fresh_critic, fresh_actor = _weights(fresh.policy.model.critic), _weights(fresh.policy.model.actor)
    ckpt = os.path.join(os.path.dirname(main.exp_name), 'tiny', 'ckpt', 'ckpt_last.pth.tar')
    main.exp_name = str(tmp_path / 'partial')
    main.policy.learn.learner = dict(hook=dict(load_ckpt_before_run=f'actor@{ckpt}'))
    _, run = _built(main, create)
    with closing(run):
        run.learner.call_hook('before_run')
        model, target = run.policy.model, run.learner.policy.state_dict()['target_model']
        actor, critic = _weights(model.actor), _weights(model.critic)
    assert all(torch.equal(v, source['model'][f'actor.{k}']) for k, v in actor.items())
    assert not all(torch.equal(v, fresh_actor[k]) for k, v in actor.items())
    assert all(torch.equal(v, fresh_critic[k]) for k, v in critic.items())     # the critics as initialised
    assert all(torch.equal(target[f'critic.{k}'], v) for k, v in fresh_critic.items())


def test_partial_load_names_the_modules_that_exist(tiny_pendulum, tmp_path):
    main, create = tiny_pendulum
    serial_pipeline((copy.deepcopy(main), create), seed=0, max_env_step=60)
    ckpt = os.path.join(main.exp_name, 'ckpt', 'ckpt_last.pth.tar')
    main.exp_name = str(tmp_path / 'bad')
    main.policy.learn.learner = dict(hook=dict(load_ckpt_before_run=['actor@' + ckpt, 'critics@' + ckpt]))
    with pytest.raises(ValueError, match="no module 'critics'; its modules: actor, critic"):
        serial_pipeline((main, create), seed=0, max_env_step=60)
    main.policy.learn.learner = dict(hook=dict(load_ckpt_before_run='actor@' + str(tmp_path / 'nothing.pth.tar')))
    with pytest.raises(ValueError, match="no checkpoint file"):
        serial_pipeline((main, create), seed=0, max_env_step=60)


def _sac(main, **learn):
    """A compiled tiny SAC policy (learn mode) with ``learn`` overrides, and its config."""
    from ding_lite.config import compile_config
    from policy_zoo import create_policy
    main = copy.deepcopy(main)
    main.policy.learn.update(learn)
    main.policy.type = 'sac'
    cfg = compile_config(main, save_cfg=False)
    return create_policy(cfg.policy, enable_field=['learn']), cfg


def _batch(n: int = 8, obs: int = 3, act: int = 1):
    g = torch.Generator().manual_seed(0)
    return [{'obs': torch.randn(obs, generator=g), 'next_obs': torch.randn(obs, generator=g),
             'action': torch.rand(act, generator=g) * 2 - 1, 'reward': torch.randn((), generator=g),
             'done': torch.tensor(False)} for _ in range(n)]


def test_weight_decay_is_l2_added_to_each_networks_gradient_as_by_hand(tiny_pendulum):
    main, create = tiny_pendulum
    main.policy.learn.update(batch_size=8)
    policy, cfg = _sac(main, weight_decay_q=0.5, weight_decay_policy=0.0, learning_rate_q=0.1)
    critic = list(policy._model.critic.parameters())
    before = [p.detach().clone() for p in critic]
    grads = []
    policy._optimizer_q.register_step_pre_hook(lambda opt, *_: grads.append([p.grad.clone() for p in critic]))
    policy.learn_mode.forward(_batch())
    # Adam's first step on g' = g + 0.5 w: m = (1 - b1) g', v = (1 - b2) g'^2, w -= lr m_hat / (sqrt(v_hat) + eps)
    for w0, w1, g in zip(before, critic, grads[0]):
        decayed = g + 0.5 * w0
        assert torch.allclose(w1, w0 - 0.1 * decayed / (decayed.abs() + 1e-8), atol=1e-6)
    assert policy._optimizer_q.param_groups[0]['weight_decay'] == 0.5
    assert policy._optimizer_policy.param_groups[0]['weight_decay'] == 0.0


def test_target_critics_follow_every_nth_learn_step(tiny_pendulum):
    main, _ = tiny_pendulum
    main.policy.learn.update(batch_size=8)
    policy, _ = _sac(main, target_update_freq=2, target_theta=0.25)
    target = lambda: {k: v.clone() for k, v in policy._target_model.state_dict().items()  # noqa: E731
                      if k.startswith('critic')}
    start = target()
    policy.learn_mode.forward(_batch())
    assert all(torch.equal(v, start[k]) for k, v in target().items())          # step 1: not yet
    policy.learn_mode.forward(_batch())
    online = {k: v for k, v in policy._model.state_dict().items() if k.startswith('critic')}
    for key, value in target().items():                                       # step 2: Polyak with theta
        assert torch.allclose(value, 0.75 * start[key] + 0.25 * online[key], atol=1e-6)


@pytest.mark.parametrize('scheme', ['xavier', 'orthogonal'])
def test_model_init_scheme_sets_every_linear_layer(tiny_pendulum, scheme):
    main, _ = tiny_pendulum
    main.policy.model.init = scheme
    policy, _ = _sac(main)
    layers = [m for m in policy._model.actor.modules() if isinstance(m, torch.nn.Linear)]
    layers += [w for m in policy._model.critic.modules() if type(m).__name__ == 'EnsembleLinear' for w in m.weight]
    assert layers
    for layer in layers:
        weight = layer.weight if isinstance(layer, torch.nn.Module) else layer
        if isinstance(layer, torch.nn.Module):
            assert torch.count_nonzero(layer.bias) == 0
        fan_out, fan_in = weight.shape
        if scheme == 'xavier':                     # U(-a, a), a = sqrt(6 / (fan_in + fan_out))
            assert weight.abs().max() <= (6 / (fan_in + fan_out)) ** 0.5
        else:                                      # orthonormal rows or columns
            small = weight @ weight.T if fan_out <= fan_in else weight.T @ weight
            assert torch.allclose(small, torch.eye(len(small)), atol=1e-5)


def test_optimiser_knobs_refuse_bad_values_at_compile_time(tiny_pendulum):
    from ding_lite.config import ConfigError
    main, _ = tiny_pendulum
    for key, value, words in (('weight_decay_q', -1.0, 'an L2 weight decay'),
                              ('target_update_freq', 0, 'an int >= 1')):
        with pytest.raises(ConfigError, match=words):
            _sac(main, **{key: value})
    main.policy.model.init = 'kaiming'
    with pytest.raises(ConfigError, match="model.init='kaiming': expected one of default, xavier, orthogonal"):
        _sac(main)


def test_reward_norm_scales_by_the_running_returns_spread_by_hand(tiny_pendulum):
    import numpy as np
    from entry.kit.run_parts import store
    main, create = tiny_pendulum
    main.env.norm_reward = dict(use_norm=True, clip=10.0)
    main.policy.learn.discount_factor = 0.9
    cfg, run = _built(main, create)
    with closing(run):
        batch = run.collector.collect_batch(n_sample=60)              # 2 envs x 30 steps: one episode end each
        rewards = np.asarray(batch['reward'], np.float64).reshape(30, 2)
        returns, running = [], np.zeros(2)
        for t, row in enumerate(rewards):                             # SB3: R = gamma R + r, zero after a done
            running = 0.9 * running + row
            returns.append(running.copy())
            if t == 19:
                running = np.zeros(2)
        returns = np.asarray(returns).reshape(-1)
        assert np.allclose(batch['running_return'], returns, rtol=1e-5)
        store(cfg, run, batch)
        norm = run.policy.model.reward_norm
        assert 'running_return' not in run.buffer.sample(4)           # the column is not stored
        assert float(norm.count) == 60 and np.isclose(float(norm.var), returns.var(), rtol=1e-4)
        sample = run.buffer.sample(16)
        raw = sample.reward
        scaled = run.policy._preprocess_learn(sample).reward
        assert torch.allclose(scaled, (raw / (returns.var() + 1e-8) ** 0.5).clamp(-10, 10).float(), rtol=1e-4)
        state = run.learner.policy.state_dict()['model']
        assert 'reward_norm.var' in state                              # kept in every checkpoint
        evaluator_before = norm.count.clone()
        run.evaluator.run_episodes()
        assert torch.equal(norm.count, evaluator_before)              # frozen in evaluation


def test_a_bf16_run_through_the_cli_trains_and_resumes(tmp_path):
    import pprint
    import subprocess
    from tests.conftest import TINY_CREATE, TINY_PENDULUM
    path = tmp_path / 'cfg.py'
    main = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'run'))
    path.write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(TINY_CREATE)}\n")
    command = ['ding_lite', '-m', 'serial', '-c', str(path), '-s', '0', '--set', 'policy.learn.amp=bf16']
    ran = subprocess.run(command + ['--max-env-step', '120'], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    resumed = subprocess.run(command + ['--resume', '--max-env-step', '200'], capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    log = open(tmp_path / 'run' / 'log' / 'learner.txt').read()
    assert 'critic_loss' in log and 'nan' not in log.lower() and 'envstep 200' in log
