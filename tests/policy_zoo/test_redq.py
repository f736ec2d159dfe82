"""REDQ, DroQ, SAC-N and EDAC against hand computations (constant-output critics, EDAC's term member by member),
and their modes."""
from __future__ import annotations

import pytest
import torch

import policy_zoo.redq as redq
from ding_lite.config import ConfigError, compile_config
from ding_lite.data import default_collate
from policy_zoo import get_policy_cls
from tests.conftest import small_variant_steps_to

Q = torch.tensor([[5.0], [1.0], [3.0], [2.0]])  # 4 critics, one sample


def _policy(policy_type='redq', model=None, **learn):
    main = dict(exp_name='unused', policy=dict(
        model=dict(dict(obs_shape=3, action_shape=1, actor_head_hidden_size=8, critic_head_hidden_size=8),
                   **(model or {})),
        learn=dict(dict(batch_size=4), **learn)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type=policy_type)), save_cfg=False)
    return get_policy_cls(cfg.policy)(cfg.policy, enable_field=['learn'])


def _batch(n=4, action_size=1):
    return default_collate([{'obs': torch.randn(3), 'action': torch.rand(action_size) * 2 - 1, 'reward': 1.0,
                             'next_obs': torch.randn(3), 'done': False} for _ in range(n)])


def test_the_target_is_the_min_over_the_drawn_subset(monkeypatch):
    policy = _policy(model=dict(n_critics=4), alpha=0.5, auto_alpha=False)
    monkeypatch.setattr(redq, 'tanh_gaussian_sample', lambda mu, sigma: (torch.zeros_like(mu), torch.full(
        mu.shape[:1], -2.0)))                                            # log pi = -2: alpha * log pi = -1
    monkeypatch.setattr(policy, '_critic', lambda obs, action=None, target=False: Q)
    monkeypatch.setattr(policy, '_subset', lambda: torch.tensor([0, 2]))
    assert policy._soft_target_v(torch.zeros(1, 3)).tolist() == [4.0]  # min(5, 3) + 1
    monkeypatch.setattr(policy, '_subset', lambda: torch.tensor([0, 3]))
    assert policy._soft_target_v(torch.zeros(1, 3)).tolist() == [3.0]  # min(5, 2) + 1


def test_a_fresh_subset_of_distinct_members_each_update_and_members_differ():
    policy = _policy()  # N = 10, M = 2
    torch.manual_seed(0)
    subsets = [tuple(policy._subset().tolist()) for _ in range(20)]
    assert all(len(set(s)) == 2 and set(s) <= set(range(10)) for s in subsets)
    assert len(set(subsets)) > 10  # 45 possible pairs: fresh draws, not one fixed pair
    first = policy.model.critic[0].weight                               # [N, in, hidden]
    assert all(not torch.equal(first[0], first[k]) for k in range(1, 10))  # each member its own initialisation


def test_the_actor_maximises_the_mean_of_every_member(monkeypatch):
    policy = _policy(model=dict(n_critics=4))
    monkeypatch.setattr(policy, '_critic', lambda obs, action=None, target=False: Q)
    assert policy._actor_q(torch.zeros(1, 3), torch.zeros(1, 1)).tolist() == [2.75]


def test_the_actor_and_alpha_step_once_per_policy_delay_critic_steps():
    policy = _policy(policy_delay=3, update_per_collect=3)
    actor_before = [p.clone() for p in policy.model.actor.parameters()]
    for _ in range(7):
        stats = policy.learn_mode.forward(_batch())
    steps = lambda optimizer: int(next(iter(optimizer.state.values()))['step'])  # noqa: E731
    assert steps(policy._optimizer_q) == 7 and steps(policy._optimizer_policy) == 3  # at critic steps 0, 3, 6
    assert steps(policy._alpha.optimizer) == 3 and {'policy_loss', 'alpha_loss'} <= set(stats)
    assert any(not torch.equal(a, b) for a, b in zip(actor_before, policy.model.actor.parameters()))
    assert policy.learn_mode.state_dict()['learn_steps'] == 7


def test_bad_settings_are_refused():
    with pytest.raises(ConfigError, match='subset_size <= policy.model.n_critics'):
        _policy(model=dict(n_critics=2), subset_size=3)
    with pytest.raises(ConfigError, match='policy_delay must be a positive int'):
        _policy(policy_delay=0)


def test_droq_blocks_dropout_in_the_target_and_off_in_eval():
    policy = _policy('droq', model=dict(dropout=0.5))
    kinds = [type(layer).__name__ for layer in policy.model.critic]
    assert kinds[:4] == ['EnsembleLinear', 'Dropout', 'EnsembleLayerNorm', 'ReLU'] and policy._n_critics == 2
    batch = policy._preprocess_learn(_batch())  # the learn step: every critic in training mode, targets too
    target = [policy._critic(batch.next_obs, batch.action, target=True) for _ in range(2)]
    assert not torch.equal(*target)  # dropout live in the target critics
    policy.model.eval()
    critic = [policy.model.compute_critic({'obs': batch.obs, 'action': batch.action})['q_value'] for _ in range(2)]
    assert torch.equal(*critic)  # and off outside the learn step


def test_droq_actor_takes_the_mean_of_its_two_critics(monkeypatch):
    policy = _policy('droq')
    monkeypatch.setattr(policy, '_critic', lambda obs, action=None, target=False: Q[:2])
    assert policy._actor_q(torch.zeros(1, 3), torch.zeros(1, 1)).tolist() == [3.0]  # (5 + 1) / 2, not the min


def test_sac_n_takes_the_min_of_all_members_for_the_target_and_the_actor(monkeypatch):
    policy = _policy('sac_n', model=dict(n_critics=4), alpha=0.5, auto_alpha=False)
    assert type(policy).__name__ == 'SACNPolicy' and policy._policy_delay == 1
    monkeypatch.setattr(redq, 'tanh_gaussian_sample', lambda mu, sigma: (torch.zeros_like(mu), torch.full(
        mu.shape[:1], -2.0)))
    monkeypatch.setattr(policy, '_critic', lambda obs, action=None, target=False: Q)
    monkeypatch.setattr(policy, '_subset', lambda: pytest.fail('SAC-N draws no subset'))
    assert policy._soft_target_v(torch.zeros(1, 3)).tolist() == [2.0]    # min(5, 1, 3, 2) + 1
    assert policy._actor_q(torch.zeros(1, 3), torch.zeros(1, 1)).tolist() == [1.0]
    policy._cfg.learn.with_q_entropy = False                              # DI-engine's EDAC: no entropy bonus
    assert policy._soft_target_v(torch.zeros(1, 3)).tolist() == [1.0]


def test_edacs_diversity_term_by_hand_member_by_member():
    """``sum_{i != j} <g_i, g_j> / (N - 1)``, averaged over the batch, with each member's gradient in the action
    taken on its own and the pairs summed one by one; the critics' loss is SAC-N's plus eta times it."""
    torch.manual_seed(0)
    policy = _policy('edac', model=dict(n_critics=3, action_shape=2), eta=0.5)
    batch = policy._preprocess_learn(_batch(5, action_size=2))
    units = []
    for i in range(3):
        action = batch.action.clone().requires_grad_(True)
        q_i = policy._critic(batch.obs, action)[i]                         # member i alone
        grad, = torch.autograd.grad(q_i.sum(), action)
        units.append(grad / grad.norm(dim=-1, keepdim=True))              # [B, A]
    pairs = sum((units[i] * units[j]).sum(-1) for i in range(3) for j in range(3) if i != j)
    expected = pairs.mean() / 2
    term = policy._gradient_similarity(batch.obs, batch.action)
    torch.testing.assert_close(term, expected)
    assert term.requires_grad  # it trains the critics (the gradient of a gradient)
    torch.manual_seed(1)
    with_term = policy._critic_loss(batch)[0]
    policy._cfg.learn.eta = 0.0
    torch.manual_seed(1)
    torch.testing.assert_close(with_term, policy._critic_loss(batch)[0] + 0.5 * expected)


def test_edac_reads_ensemble_num_learns_and_refuses_what_it_cannot_do():
    policy = _policy('edac', model=dict(ensemble_num=5))                  # DI-engine's name for n_critics
    assert policy._n_critics == 5 and 'ensemble_num' not in policy._cfg.model
    before = [p.clone() for p in policy.model.critic.parameters()]
    stats = policy.learn_mode.forward(_batch())
    assert all(torch.isfinite(v).all() for v in stats.values())
    assert all(not torch.equal(a, b) for a, b in zip(before, policy.model.critic.parameters()))
    with pytest.raises(ConfigError, match="eta=1.0 .* needs n_critics >= 2 and vector observations"):
        _policy('edac', model=dict(obs_shape=[3, 8, 8]))
    with pytest.raises(ConfigError, match="actor_q must be 'mean' .* or 'min'"):
        _policy('sac_n', actor_q='max')
    with pytest.raises(ConfigError, match='eta .* must be a number >= 0'):
        _policy('edac', eta=-1.0)


@pytest.mark.parametrize('policy_type', ['redq', pytest.param('droq', marks=pytest.mark.slow)])  # suite time:
def test_reaches_minus_250_on_pendulum(policy_type, tmp_path):  # DroQ is REDQ's update with its own blocks (above)
    """At hidden 64 and batch 64 (half the zoo configs' sizes), G=5, seeds 0-4 reached -250 at the first evaluation
    after 1000 env steps of learning (2.0k; DroQ's seeds 2 and 4 at 2.5k and 3.0k), 15-29 s each."""
    steps = small_variant_steps_to(f'pendulum_{policy_type}_config', tmp_path / policy_type, -250, THRESHOLD)
    assert steps is not None and steps <= THRESHOLD


THRESHOLD = 6_000  # the issue's goal for both; over twice the seeds' worst
