from __future__ import annotations

import math
import os

import pytest
import torch
from torch import nn

from ding_lite.config import compile_config
from ding_lite.data import default_collate
from ding_lite.rl_utils import epsilon_greedy
from policy_zoo import DiscreteSACPolicy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def _cfg(obs=1, act=2, **learn):
    main = dict(exp_name='unused', policy=dict(model=dict(obs_shape=obs, action_shape=act), learn=learn))
    return compile_config(main, create_cfg=dict(policy=dict(type='discrete_sac')), save_cfg=False).policy


class Table(nn.Module):
    def __init__(self, values):
        super().__init__()
        self.table = nn.Parameter(torch.tensor(values))


class TableQAC(nn.Module):
    """Two states (obs 0 / 1), two actions: logits and twin Q tables."""

    twin_critic, action_size = True, 2

    def __init__(self):
        super().__init__()
        self.actor = Table([[0.0, math.log(3.0)], [math.log(2.0), 0.0]])        # pi(s0) = [1/4, 3/4], pi(s1) = [2/3, 1/3]
        self.critic = Table([[[1.0, 2.0], [3.0, 0.0]], [[1.5, 1.0], [2.0, 1.0]]])  # [E, S, A]

    def forward(self, x, mode):
        state = (x if isinstance(x, torch.Tensor) else x['obs'])[:, 0].long()
        if mode == 'compute_actor':
            return {'logit': self.actor.table[state]}
        return {'q_value': self.critic.table[:, state]}


def test_losses_match_hand_computed_values_on_two_state_toy():
    policy = DiscreteSACPolicy(_cfg(auto_alpha=False, alpha=0.5, discount_factor=0.9), model=TableQAC())
    batch = policy._preprocess_learn(default_collate([
        {'obs': torch.tensor([0.0]), 'action': torch.tensor(1), 'reward': 1.0, 'next_obs': torch.tensor([1.0]),
         'done': False}]))
    # V(s1) = sum_a pi(a|s1) (min_e Q_e(s1, a) - alpha log pi(a|s1)), with min Q(s1) = [2, 0]
    v_next = 2 / 3 * (2 - 0.5 * math.log(2 / 3)) + 1 / 3 * (0 - 0.5 * math.log(1 / 3))
    torch.testing.assert_close(policy._soft_target_v(batch.next_obs), torch.tensor([v_next]))
    td, q, target_q = policy._critic_td(batch)
    torch.testing.assert_close(q, torch.tensor([[2.0], [1.0]]))              # Q_e(s0, a=1)
    torch.testing.assert_close(target_q, torch.tensor([1 + 0.9 * v_next]))
    # actor: sum_a pi (alpha log pi - min Q(s0)), min Q(s0) = [1, 1]
    loss, entropy, _ = policy._actor_loss(batch.obs)
    pi = [0.25, 0.75]
    torch.testing.assert_close(loss, torch.tensor(sum(p * (0.5 * math.log(p) - 1.0) for p in pi)))
    torch.testing.assert_close(entropy, torch.tensor([-sum(p * math.log(p) for p in pi)]))
    stats = policy.learn_mode.forward(batch)
    expected_critic = (2 - (1 + 0.9 * v_next)) ** 2 + (1 - (1 + 0.9 * v_next)) ** 2
    assert stats['critic_loss'].item() == pytest.approx(expected_critic, rel=1e-5)


def test_target_entropy_ratio_default_and_explicit():
    policy = DiscreteSACPolicy(_cfg(obs=4, act=3))
    assert policy._alpha.target_entropy == pytest.approx(policy._cfg.learn.target_entropy_ratio * math.log(3))
    assert DiscreteSACPolicy(_cfg(obs=4, act=3, target_entropy=0.3))._alpha.target_entropy == 0.3
    assert 0 < policy._alpha.target_entropy < math.log(3)      # reachable: alpha can settle


def test_auto_alpha_grows_when_entropy_is_below_target():
    policy = DiscreteSACPolicy(_cfg(auto_alpha=True, target_entropy=0.69, learning_rate_alpha=0.1), model=TableQAC())
    batch = [{'obs': torch.tensor([0.0]), 'action': torch.tensor(1), 'reward': 0.0, 'next_obs': torch.tensor([1.0]),
              'done': True}]
    before = policy._alpha.value.item()
    policy.learn_mode.forward(batch)  # entropy of pi(s0) = 0.56 < 0.69: alpha rises
    assert policy._alpha.value.item() > before


def test_eps_schedule_drives_collection_and_eval_is_greedy():
    torch.manual_seed(0)
    fn = epsilon_greedy(0.95, 0.1, 100, 'exp')
    assert fn(0) == pytest.approx(0.95) and fn(100) == pytest.approx(0.1 + 0.85 / math.e)
    assert epsilon_greedy(1.0, 0.0, 10, 'linear')(5) == 0.5 and epsilon_greedy(1.0, 0.0, 10, 'linear')(50) == 0.0
    with pytest.raises(ValueError, match="'exp' or 'linear'"):
        epsilon_greedy(1.0, 0.1, 10, 'cosine')
    policy = DiscreteSACPolicy(_cfg(obs=1, act=2), model=TableQAC())
    obs = {i: torch.tensor([0.0]) for i in range(4000)}
    uniform = torch.stack([o['action'] for o in policy.collect_mode.forward(obs, eps=1.0).values()])
    assert abs(uniform.float().mean() - 0.5) < 0.03
    soft = torch.stack([o['action'] for o in policy.collect_mode.forward(obs, eps=0.0).values()])
    assert abs(soft.float().mean() - 0.75) < 0.03                  # follows pi(s0) = [1/4, 3/4]
    assert policy._collect_envstep == 8000                          # the schedule's clock: env steps acted for
    greedy = policy.eval_mode.forward({0: torch.tensor([0.0]), 1: torch.tensor([1.0])})
    assert greedy[0]['action'].item() == 1 and greedy[1]['action'].item() == 0


def test_action_mask_is_respected_in_collect_eval_and_learn():
    policy = DiscreteSACPolicy(_cfg(obs=3, act=3))
    mask = torch.tensor([True, False, True])
    obs = {i: {'obs': torch.randn(3), 'action_mask': mask} for i in range(500)}
    for out in (policy.collect_mode.forward(obs, eps=1.0), policy.collect_mode.forward(obs, eps=0.0),
                policy.eval_mode.forward(obs)):
        assert all(o['action'].item() != 1 for o in out.values())
    batch = default_collate(list(obs.values()))
    assert policy._log_pi(batch).exp()[:, 1].max() < 1e-6


def test_fully_masked_observation_names_the_env():
    from ding_lite.model import NoValidActionError
    policy = DiscreteSACPolicy(_cfg(obs=3, act=3))
    obs = {env_id: {'obs': torch.randn(3), 'action_mask': torch.tensor([True, False, True])} for env_id in (4, 7, 9)}
    obs[7]['action_mask'] = torch.zeros(3, dtype=torch.bool)
    for forward in (policy.collect_mode.forward, policy.eval_mode.forward):
        with pytest.raises(NoValidActionError, match=r"action_mask allows no action for env\(s\) \[7\]"):
            forward(obs)


def test_eps_clock_is_part_of_the_collect_state():
    policy = DiscreteSACPolicy(_cfg(obs=1, act=2), model=TableQAC())
    policy.collect_mode.forward({i: torch.tensor([0.0]) for i in range(30)})
    state = policy.collect_mode.state_dict()
    assert state['collect_envstep'] == 30
    other = DiscreteSACPolicy(_cfg(obs=1, act=2), model=TableQAC())
    other.collect_mode.load_state_dict(state)
    assert other._collect_envstep == 30 and other._eps_fn(other._collect_envstep) < other._eps_fn(0)


DI_ENGINE_CARTPOLE_SAC = '''
from easydict import EasyDict

cartpole_sac_config = dict(
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=0,
        multi_agent=False,
        model=dict(
            agent_obs_shape=4,
            global_obs_shape=4,
            action_shape=2,
            twin_critic=True,
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
        ),
        learn=dict(
            update_per_collect=2,
            batch_size=64,
            learning_rate_q=5e-3,
            learning_rate_policy=5e-3,
            learning_rate_alpha=3e-4,
            ignore_done=False,
            target_theta=0.01,
            discount_factor=0.99,
            alpha=0.2,
            auto_alpha=False,
        ),
        collect=dict(
            env_num=8,
            n_sample=256,
            unroll_len=1,
        ),
        command=dict(),
        eval=dict(
            evaluator=dict(eval_freq=50, ),
            env_num=5,
        ),
        other=dict(
            eps=dict(
                type='exp',
                start=0.95,
                end=0.1,
                decay=50000,
            ), replay_buffer=dict(replay_buffer_size=100000, )
        ),
    ),
)

cartpole_sac_config = EasyDict(cartpole_sac_config)
main_config = cartpole_sac_config

cartpole_sac_create_config = dict(
    env=dict(
        type='cartpole',
    ),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac', ),
)
cartpole_sac_create_config = EasyDict(cartpole_sac_create_config)
create_config = cartpole_sac_create_config
'''


def _bare_discrete_copy(policy: DiscreteSACPolicy):
    """The benchmarks' hand-written discrete SAC, holding ``policy``'s weights."""
    from tests.benchmark.bare_sac import BareDiscreteSAC
    learn = policy._cfg.learn
    bare = BareDiscreteSAC(4, 3, 32, learn.learning_rate_q, learn.learning_rate_policy, learn.learning_rate_alpha)
    model = policy._model
    with torch.no_grad():
        for mine, theirs in zip([model.actor[0][0], model.actor[0][2], model.actor[1]], bare.actor[0::2]):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
        for e, critics in enumerate([(bare.q1, bare.q1_t), (bare.q2, bare.q2_t)]):
            for layer in (0, 2, 4):
                for critic in critics:
                    critic[layer].weight.copy_(model.critic[layer].weight[e].T)
                    critic[layer].bias.copy_(model.critic[layer].bias[e, 0])
    return bare


def test_learn_steps_are_the_hand_written_discrete_sac_update():
    """The benchmark compares like with like: after 3 steps on the same batches (auto alpha on), the framework's
    actor, critics, target critics and alpha equal those of the bare discrete SAC update."""
    torch.manual_seed(0)
    main = dict(exp_name='unused', policy=dict(
        model=dict(obs_shape=4, action_shape=3, actor_head_hidden_size=32, critic_head_hidden_size=32),
        learn=dict(batch_size=16, learning_rate_q=1e-2, learning_rate_policy=1e-2, learning_rate_alpha=1e-2)))
    policy = DiscreteSACPolicy(compile_config(main, create_cfg=dict(policy=dict(type='discrete_sac')),
                                              save_cfg=False).policy)
    bare = _bare_discrete_copy(policy)
    for _ in range(3):
        batch = default_collate([{'obs': torch.randn(4), 'action': torch.randint(3, ()), 'reward': float(torch.randn(())),
                                  'next_obs': torch.randn(4), 'done': bool(i % 5 == 0)} for i in range(16)])
        policy.learn_mode.forward(batch)
        bare.update(batch.obs, batch.action, batch.reward, batch.next_obs, batch.done.float())
    expected = _bare_discrete_copy(policy)
    for mine, theirs in [(expected.actor, bare.actor), (expected.q1, bare.q1), (expected.q2, bare.q2)]:
        for a, b in zip(mine.parameters(), theirs.parameters()):  # lr=1e-2 steps: a wrong loss moves them that far
            torch.testing.assert_close(a, b, rtol=0, atol=1e-4)
    target = policy._target_model.critic
    for e, critic in enumerate([bare.q1_t, bare.q2_t]):
        for layer in (0, 2, 4):
            torch.testing.assert_close(target[layer].weight[e].T, critic[layer].weight, rtol=0, atol=1e-6)
    torch.testing.assert_close(policy._alpha.raw.detach(), bare.log_alpha.detach()[0], rtol=0, atol=1e-6)
