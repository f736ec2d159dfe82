from __future__ import annotations

import copy
import math

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import default_collate
from ding_lite.registry import POLICY_REGISTRY
from envs import BaseEnvTimestep
from policy_zoo import Policy, SACPolicy, create_policy, get_policy_cls


def _cfg(**learn):
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=3, action_shape=2, actor_head_hidden_size=32, critic_head_hidden_size=32),
        learn=dict(dict(batch_size=16), **learn)))
    return compile_config(main, create_cfg=dict(policy=dict(type='sac')), save_cfg=False).policy


def _transitions(n=16, obs=3, act=2):
    return [{'obs': torch.randn(obs), 'action': torch.rand(act) * 2 - 1, 'reward': float(torch.randn(())),
             'next_obs': torch.randn(obs), 'done': bool(i % 4 == 0)} for i in range(n)]


def test_registered_and_factory():
    assert POLICY_REGISTRY.get('sac') is SACPolicy and get_policy_cls({'type': 'sac'}) is SACPolicy
    policy = create_policy(_cfg())
    assert isinstance(policy, Policy)
    with pytest.raises(ValueError, match="unknown policy field 'train'"):
        SACPolicy(_cfg(), enable_field=['train'])


def test_learn_accepts_list_and_batch_and_returns_detached_scalars():
    torch.manual_seed(0)
    policy = SACPolicy(_cfg())
    data = _transitions()
    for batch in (data, default_collate(data)):
        stats = policy.learn_mode.forward(batch)
        assert set(policy.learn_mode.monitor_vars()) <= set(stats)
        for value in stats.values():
            assert isinstance(value, torch.Tensor) and not value.requires_grad
            assert value.dim() == (1 if value is stats['priority'] else 0)


def test_priority_is_mean_abs_td_per_sample():
    policy = SACPolicy(_cfg())
    data = _transitions()
    torch.manual_seed(3)
    td, _, _ = policy._critic_td(policy._preprocess_learn(data))
    torch.manual_seed(3)
    stats = policy.learn_mode.forward(data)
    assert stats['priority'].shape == (16,)
    torch.testing.assert_close(stats['priority'], td.detach().abs().mean(0))


def test_default_target_entropy_and_alpha_modes():
    assert SACPolicy(_cfg())._alpha.target_entropy == -2.0
    assert SACPolicy(_cfg(target_entropy=-0.5))._alpha.target_entropy == -0.5
    fixed = SACPolicy(_cfg(auto_alpha=False, alpha=0.3))
    stats = fixed.learn_mode.forward(_transitions())
    assert 'alpha_loss' not in stats and stats['alpha'].item() == pytest.approx(0.3)
    linear = SACPolicy(_cfg(log_space=False))
    assert linear._alpha.raw.item() == pytest.approx(0.2)
    assert 'alpha_loss' in linear.learn_mode.forward(_transitions())


def test_ignore_done_changes_the_target():
    data = [dict(t, done=True, reward=0.0) for t in _transitions()]
    torch.manual_seed(0)
    done = SACPolicy(_cfg()).learn_mode.forward(data)['target_q_value']
    torch.manual_seed(0)
    ignored = SACPolicy(_cfg(ignore_done=True)).learn_mode.forward(data)['target_q_value']
    assert done.item() == 0.0 and ignored.item() != 0.0


def test_learning_moves_the_actor_towards_the_best_action():
    """A one-step bandit with reward -(a - 0.5)^2: the deterministic action must approach 0.5."""
    torch.manual_seed(0)
    cfg = _cfg(learning_rate_q=3e-3, learning_rate_policy=3e-3, auto_alpha=False, alpha=0.01, batch_size=64)
    cfg.model.action_shape = 1
    policy = SACPolicy(cfg)
    obs = torch.zeros(256, 3)
    for _ in range(300):
        action = torch.rand(256, 1) * 2 - 1
        batch = {'obs': obs, 'action': action, 'reward': -(action[:, 0] - 0.5) ** 2, 'next_obs': obs,
                 'done': torch.ones(256, dtype=torch.bool)}
        policy.learn_mode.forward(default_collate([{k: v[i] for k, v in batch.items()} for i in range(64)]))
    act = policy.eval_mode.forward({0: torch.zeros(3)})[0]['action']
    assert abs(act.item() - 0.5) < 0.15


def test_target_critic_follows_by_polyak_and_actor_copy_is_untouched():
    policy = SACPolicy(_cfg(target_theta=0.5))
    target = policy._target_model.unwrapped
    before_actor = [p.clone() for p in target.actor.parameters()]
    before_critic = [p.clone() for p in target.critic.parameters()]
    policy.learn_mode.forward(_transitions())
    online = list(policy._model.critic.parameters())
    for old, new, live in zip(before_critic, target.critic.parameters(), online):
        torch.testing.assert_close(new, 0.5 * old + 0.5 * live.detach())
    for old, new in zip(before_actor, target.actor.parameters()):
        torch.testing.assert_close(new, old)


def test_collect_samples_eval_is_deterministic_tanh_mean():
    policy = SACPolicy(_cfg())
    obs = {3: torch.randn(3), 7: torch.randn(3)}
    collected = [policy.collect_mode.forward(obs)[3]['action'] for _ in range(5)]
    assert all(a.shape == (2,) and a.abs().max() <= 1 for a in collected)
    assert not torch.allclose(collected[0], collected[1])
    evals = policy.eval_mode.forward(obs)
    assert set(evals) == {3, 7}
    torch.testing.assert_close(evals[7]['action'], policy.eval_mode.forward(obs)[7]['action'])
    mu = policy._model.compute_actor(obs[7].unsqueeze(0))['logit'][0][0]
    torch.testing.assert_close(evals[7]['action'], torch.tanh(mu))


def test_process_transition_keeps_done_from_timestep():
    policy = SACPolicy(_cfg())
    timestep = BaseEnvTimestep(obs=torch.ones(3), reward=1.5, done=False, info={})
    t = policy.collect_mode.process_transition(torch.zeros(3), {'action': torch.zeros(2)}, timestep)
    assert t['reward'] == 1.5 and t['done'] is False and t['next_obs'].sum() == 3
    assert policy.collect_mode.get_train_sample([t, t]) == [t, t]


@pytest.mark.parametrize('mode', ['learn_mode', 'collect_mode', 'eval_mode'])
def test_state_dict_round_trip_reproduces_the_next_action(mode):
    trained = SACPolicy(_cfg())
    for _ in range(3):
        trained.learn_mode.forward(_transitions())
    fresh = SACPolicy(_cfg())
    obs = {0: torch.randn(3)}
    assert not torch.allclose(fresh.eval_mode.forward(obs)[0]['action'], trained.eval_mode.forward(obs)[0]['action'])
    getattr(fresh, mode).load_state_dict(getattr(trained, mode).state_dict())
    torch.testing.assert_close(fresh.eval_mode.forward(obs)[0]['action'], trained.eval_mode.forward(obs)[0]['action'])
    if mode == 'learn_mode':  # optimizers, alpha and target came too: the next update is identical
        data = _transitions()
        torch.manual_seed(1)
        a = trained.learn_mode.forward(data)
        torch.manual_seed(1)
        b = fresh.learn_mode.forward(data)
        for key in a:
            torch.testing.assert_close(a[key], b[key])


@pytest.mark.parametrize('twin', [True, False])
def test_column_reward_and_done_give_the_same_loss_as_vectors(twin):
    """DI-engine's [B, 1] reward/done must not broadcast against [B] targets into [B, B]."""
    data = _transitions()
    column = [dict(t, reward=torch.tensor([t['reward']]), done=torch.tensor([t['done']])) for t in data]
    cfg = _cfg()
    cfg.model.twin_critic = twin
    torch.manual_seed(0)
    policy = SACPolicy(cfg)
    state = copy.deepcopy(policy.learn_mode.state_dict())
    torch.manual_seed(1)
    expected = policy.learn_mode.forward(data)
    policy.learn_mode.load_state_dict(state)
    torch.manual_seed(1)
    got = policy.learn_mode.forward(column)
    for key in ('critic_loss', 'target_q_value', 'priority'):
        torch.testing.assert_close(got[key], expected[key])
    with pytest.raises(ValueError, match="field 'reward' has shape \\(16, 2\\)"):
        policy.learn_mode.forward([dict(t, reward=torch.zeros(2)) for t in data])


def test_modes_set_train_and_eval_on_the_model():
    policy = SACPolicy(_cfg())
    policy.learn_mode.forward(_transitions())
    assert policy._model.training and policy._target_model.training
    policy.collect_mode.forward({0: torch.zeros(3)})
    assert not policy._model.training and not any(m.training for m in policy._model.modules())
    policy.learn_mode.forward(_transitions())
    assert all(m.training for m in policy._model.modules())
    policy.eval_mode.forward({0: torch.zeros(3)})
    assert not policy._model.training


def _bare_copy(policy: SACPolicy):
    """The hand-written CleanRL-style SAC of the benchmarks, holding ``policy``'s weights."""
    from tests.benchmark.bare_sac import BareSAC
    learn = policy._cfg.learn
    bare = BareSAC(3, 2, 32, learn.learning_rate_q, learn.learning_rate_policy, learn.learning_rate_alpha)
    model = policy._model
    with torch.no_grad():
        trunk, head = model.actor[0], model.actor[1]
        for mine, theirs in zip([trunk[0], trunk[2], head.mu, head.log_sigma],
                                [bare.actor.trunk[0], bare.actor.trunk[2], bare.actor.mu, bare.actor.log_std]):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
        for e, critics in enumerate([(bare.q1, bare.q1_t), (bare.q2, bare.q2_t)]):
            for layer, linear in zip([0, 2, 4], [0, 2, 4]):
                for critic in critics:
                    critic[linear].weight.copy_(model.critic[layer].weight[e].T)
                    critic[linear].bias.copy_(model.critic[layer].bias[e, 0])
    return bare


@pytest.mark.parametrize('steps', [1, 3])
def test_learn_step_is_the_hand_written_sac_update(steps):
    """The framework's step (batched critics, fused Adam, no critic gradients in the actor's step) computes what
    a plain CleanRL-style update does: same batch, same noise, same weights and temperature after each step."""
    torch.manual_seed(0)
    policy = SACPolicy(_cfg(learning_rate_q=1e-2, learning_rate_policy=1e-2, learning_rate_alpha=1e-2))
    assert policy._alpha.learned
    bare = _bare_copy(policy)
    for step in range(steps):
        batch = default_collate(_transitions())
        torch.manual_seed(100 + step)
        policy.learn_mode.forward(batch)
        torch.manual_seed(100 + step)
        bare.update(batch.obs, batch.action, batch.reward, batch.next_obs, batch.done.float())
    expected = _bare_copy(policy)  # the framework's weights (and target critics), laid out as the bare model's
    for mine, theirs in [(expected.actor, bare.actor), (expected.q1, bare.q1), (expected.q2, bare.q2)]:
        for a, b in zip(mine.parameters(), theirs.parameters()):  # Adam steps are lr=1e-2: a bug moves them that far
            torch.testing.assert_close(a, b, rtol=0, atol=1e-4)
    torch.testing.assert_close(policy._alpha.raw.detach().reshape(1), bare.log_alpha.detach(), rtol=0, atol=1e-6)
    assert abs(bare.log_alpha.item() - math.log(0.2)) > 5e-3 * steps  # it moved: lr 1e-2 per step
    target = policy._target_model.critic
    for e, critic in enumerate([bare.q1_t, bare.q2_t]):
        for layer in (0, 2, 4):
            torch.testing.assert_close(target[layer].weight[e].T, critic[layer].weight, rtol=0, atol=1e-6)


def _run_steps(cfg, steps=3):
    torch.manual_seed(0)
    policy = SACPolicy(cfg)
    for step in range(steps):
        batch = default_collate(_transitions())
        torch.manual_seed(100 + step)
        stats = policy.learn_mode.forward(batch)
    return policy, stats


def test_compiled_update_matches_eager(monkeypatch):
    import torch._inductor.config
    monkeypatch.setattr(torch._inductor.config, 'fallback_random', True)  # the same noise as eager mode draws
    eager, eager_stats = _run_steps(_cfg())
    compiled, stats = _run_steps(_cfg(compile=True))
    for a, b in zip(eager._model.parameters(), compiled._model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(eager_stats['critic_loss'], stats['critic_loss'], rtol=1e-4, atol=1e-5)


def test_compile_falls_back_to_eager_with_one_warning(monkeypatch):
    def broken_compile(fn, **kwargs):
        def run(*args, **kw):
            raise RuntimeError('no C++ compiler found')
        return run
    monkeypatch.setattr(torch, 'compile', broken_compile)
    eager, _ = _run_steps(_cfg())
    with pytest.warns(RuntimeWarning, match="torch.compile of SACPolicy's update failed .RuntimeError: no C"):
        fallback, _ = _run_steps(_cfg(compile=True))
    for a, b in zip(eager._model.parameters(), fallback._model.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_cuda_graph_on_the_cpu_warns_once_and_runs_eagerly():
    eager, eager_stats = _run_steps(_cfg())
    with pytest.warns(RuntimeWarning, match="CUDA graphs need a CUDA device and this one runs on cpu") as record:
        graphed, stats = _run_steps(_cfg(cuda_graph=True))
    assert len([w for w in record if 'CUDA graph' in str(w.message)]) == 1
    for a, b in zip(eager._model.parameters(), graphed._model.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert stats.keys() == eager_stats.keys()


def test_only_sacs_own_learn_step_draws_its_batch_in_the_graph(monkeypatch):
    """Where the executor could draw a batch inside the captured update (a graphed update on the buffer's GPU), SAC's
    learn step takes a ``Draw``; one whose reward models learn from the batch, or a class with its own
    ``_forward_learn`` or ``update`` (which may read the batch), is still given its batches."""
    from ding_lite.data import GraphSampler, ReplayBuffer
    from ding_lite.rl_utils.update_executor import UpdateExecutor
    buffer = ReplayBuffer({'replay_buffer_size': 64})
    buffer.push(_transitions(20))
    assert not create_policy(_cfg()).draws_in_graph(buffer)     # on the CPU: no graph to draw in
    monkeypatch.setattr(UpdateExecutor, 'draws_in_graph', lambda self, learn, buffer: True)
    drawing = create_policy(_cfg())
    assert drawing.draws_in_graph(buffer)
    signals = _cfg()
    signals.reward_signals = dict(extrinsic=dict(strength=1.0), rnd=dict(strength=0.1, encoding_size=8))
    assert not create_policy(signals).draws_in_graph(buffer)

    class OwnUpdate(SACPolicy):
        def update(self, batch):
            return super().update(batch)
    assert not OwnUpdate(_cfg(), enable_field=['learn']).draws_in_graph(buffer)
    outputs = []
    for draws in (True, False):                                 # a Draw's step is the step on the batch it draws
        torch.manual_seed(0)
        policy = create_policy(_cfg())
        draw = GraphSampler(buffer)(16)
        outputs.append(policy.learn_mode.forward(draw if draws else draw.gather()))
    assert outputs[0].keys() == outputs[1].keys() and 'critic_loss' in outputs[0]
    for key, value in outputs[0].items():
        assert torch.equal(value, outputs[1][key]), key
