"""Recurrent SAC (issue 38): SAC's update on a recurrent model's sequences, the collector's per-env state."""
from __future__ import annotations

import copy
import os
import pathlib
from functools import partial

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import compile_config
from ding_lite.data import ReplayBuffer
from ding_lite.worker import SampleSerialCollector
from envs import BaseEnvManager, PendulumPositionEnv
from policy_zoo import create_policy
from tests.conftest import TINY_CREATE, TINY_PENDULUM

UNROLL, BURNIN = 4, 2


def _cfg(tmp_path, policy='sac', **rnn):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / 'rnn')
    main.policy.model.update(obs_shape=2, rnn=dict(type='gru', hidden_size=8, **rnn))
    main.policy.collect.unroll_len, main.policy.burnin_step = UNROLL, BURNIN
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.env.type, create.policy.type = 'pendulum_position', policy
    return main, create


@pytest.fixture
def policy(tmp_path):
    torch.manual_seed(0)
    return create_policy(compile_config(*_cfg(tmp_path, prev_action=True), save_cfg=False).policy)


def _sequences(batch=3, steps=UNROLL + BURNIN, valid=(6, 4, 3), done_row=None):
    """A buffer sample by hand: ``valid[b]`` steps of sequence b, zeros after; terminated at ``done_row``'s end."""
    torch.manual_seed(1)
    mask = torch.arange(steps)[None] < torch.tensor(valid)[:, None]
    data = dict(obs=torch.randn(batch, steps, 2), next_obs=torch.randn(batch, steps, 2),
                action=torch.rand(batch, steps, 1) * 2 - 1, reward=torch.randn(batch, steps),
                done=torch.zeros(batch, steps, dtype=torch.bool), state=torch.randn(batch, 32) * 0.1,
                prev_action=torch.zeros(batch, 1), mask=mask)
    if done_row is not None:
        data['done'][done_row, valid[done_row] - 1] = True
    for key in ('obs', 'next_obs', 'action', 'reward'):
        data[key] = data[key] * mask.reshape(*mask.shape, *[1] * (data[key].dim() - 2))
    return data


def test_the_masked_loss_is_the_mean_over_the_loss_steps(policy):
    batch = policy._preprocess_learn(_sequences())
    loss, td, _, _ = policy._critic_loss(batch)
    rows = torch.tensor([[t >= BURNIN and t < v for t in range(UNROLL + BURNIN)] for v in (6, 4, 3)]).flatten()
    assert int(rows.sum()) == 4 + 2 + 1
    assert torch.allclose(loss, td[:, rows].pow(2).mean(-1).sum())
    from policy_zoo.sac_reports import learn_stats
    _, td, q, target_q = policy._critic_loss(batch)
    stats = learn_stats(loss, td, q, target_q, batch.obs)  # the logged means are the loss steps' too
    assert torch.allclose(stats['td_error'], td[:, rows].abs().mean())
    assert torch.allclose(stats['q_value_1'], q[0, rows].mean()) and torch.allclose(stats['target_q_value'],
                                                                                     target_q[rows].mean())
    policy_loss = policy._actor_loss(batch.obs)[0]
    mu, sigma = policy._actor(batch.obs)
    assert mu.shape == (3 * (UNROLL + BURNIN), 1) and torch.isfinite(policy_loss)


def test_a_reward_inside_the_burnin_leaves_loss_and_gradients_unchanged(policy):
    def loss_and_grads(data):
        torch.manual_seed(2)  # the same action noise in each
        batch = policy._preprocess_learn(data)
        policy._model.zero_grad()
        loss = policy._critic_loss(batch)[0] + policy._actor_loss(batch.obs)[0]
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in policy._model.parameters() if p.grad is not None]

    data = _sequences()
    changed = copy.deepcopy(data)
    changed['reward'][:, :BURNIN] += 100.0  # the burn-in steps' rewards (no prev_reward input: state unchanged)
    (loss, grads), (loss2, grads2) = loss_and_grads(data), loss_and_grads(changed)
    assert torch.equal(loss, loss2) and all(torch.equal(a, b) for a, b in zip(grads, grads2))
    changed['reward'][:, BURNIN] += 1.0  # a loss step's reward does change it (the test can fail)
    assert not torch.equal(loss_and_grads(changed)[0], loss)


def test_targets_bootstrap_on_truncation_and_not_on_termination(policy):
    terminated = policy._preprocess_learn(_sequences(done_row=1))
    truncated = policy._preprocess_learn(_sequences())
    row = 1 * (UNROLL + BURNIN) + 3  # sequence 1's last valid step
    gap = policy._td_target(terminated) - terminated.reward
    assert gap[row] == 0 and gap[row - 1] != 0
    assert (policy._td_target(truncated) - truncated.reward)[row] != 0


def test_the_stored_state_is_the_collectors_before_acting_and_resets_with_the_episode(policy):
    manager = BaseEnvManager([partial(PendulumPositionEnv, {'env_kwargs': {'max_episode_steps': 5}})] * 2)
    manager.seed(0, True)
    collector = SampleSerialCollector({'type': 'sample'}, manager, policy.collect_mode, exp_name=None)
    data = collector.collect_batch(16)
    buffer = ReplayBuffer(dict(replay_buffer_size=100, sequence_length=2))
    buffer.push(data)  # takes the collector's fields as they are
    assert data['state'].shape == (16, policy.memory['state_size'])
    for env in (0, 1):
        rows = (data['env_id'] == env).nonzero().flatten()
        starts = data['episode_start'][rows]
        assert starts.tolist() == [True, False, False, False, False, True, False, False][:len(rows)]
        state, prev = torch.zeros(1, policy.memory['state_size']), torch.zeros(1, 1)
        for row in rows.tolist():  # the model's own steps from zero at each episode start
            if data['episode_start'][row]:
                state, prev = torch.zeros_like(state), torch.zeros_like(prev)
            assert torch.allclose(data['state'][row], state[0], atol=1e-6)
            assert torch.equal(data['prev_action'][row], prev[0])
            out = policy.collect_mode.forward_batch(data['obs'][row:row + 1], memory=dict(state=state,
                                                                                           prev_action=prev))
            state, prev = out['state'], data['action'][row:row + 1]
        assert torch.allclose(torch.from_numpy(collector._memory.state[env]), state[0], atol=1e-6)
    collector.close()


def test_an_overlapped_collector_copies_both_encoders_but_not_the_critics_heads(policy):
    from ding_lite.worker.overlapped_collector import _synced_tensors
    synced = {t.data_ptr() for t in _synced_tensors(policy.model)}  # detached views of the model's own
    critic = policy.model.critic
    assert all(p.data_ptr() in synced for p in (*policy.model.actor.parameters(), *critic.encoder.parameters()))
    assert not any(p.data_ptr() in synced for p in critic.ensemble.parameters())


def test_sequences_need_a_recurrent_model(tmp_path):
    from ding_lite.utils.default_config import ConfigError
    main, create = _cfg(tmp_path)
    main.policy.model.pop('rnn')
    with pytest.raises(ConfigError, match="only a recurrent model learns from"):
        compile_config(main, create, save_cfg=False)


def test_ml_agents_memory_keys_set_the_lstm_and_the_sequence_length(tmp_path):
    from ding_lite.utils.default_config import ConfigError
    main, create = _cfg(tmp_path)
    main.policy.model.pop('rnn')
    main.policy.collect.unroll_len = 1
    main.policy.memory = dict(memory_size=32, sequence_length=6)
    cfg = compile_config(main, create, save_cfg=False)
    assert cfg.policy.model.rnn == dict(type='lstm', hidden_size=16) and cfg.policy.collect.unroll_len == 6
    assert cfg.policy.other.replay_buffer.sequence_length == 6
    assert create_policy(cfg.policy).memory['state_size'] == 2 * 32  # memory_size each for the actor and critics
    main.policy.memory = dict(memory_size=31)
    with pytest.raises(ConfigError, match="memory_size"):
        compile_config(main, create, save_cfg=False)


def test_without_save_prev_state_sequences_start_from_a_zero_state(tmp_path):
    main, create = _cfg(tmp_path)
    main.policy.save_prev_state = False
    policy = create_policy(compile_config(main, create, save_cfg=False).policy)
    manager = BaseEnvManager([partial(PendulumPositionEnv, {'env_kwargs': {'max_episode_steps': 5}})] * 2)
    manager.seed(0, True)
    collector = SampleSerialCollector({'type': 'sample'}, manager, policy.collect_mode, exp_name=None)
    data = collector.collect_batch(16)
    collector.close()
    assert 'state' not in data and 'env_id' in data  # nothing stored that no sequence would read
    buffer = ReplayBuffer(dict(replay_buffer_size=100, sequence_length=UNROLL, burnin_step=BURNIN))
    buffer.push(data)
    batch = policy._preprocess_learn(buffer.sample(4))
    assert torch.equal(batch.obs.state, torch.zeros(4, policy.memory['state_size']))
    assert torch.isfinite(policy._forward_learn(buffer.sample(4))['critic_loss'])


PINNED = os.path.join(os.path.dirname(__file__), 'data', 'recurrent_sac_three_steps.pt')


def _three_steps(kind: str, tmp_path) -> dict[str, torch.Tensor]:
    """Recurrent SAC's weights after three learn steps (lr 1e-2: a step moves a weight that far) on hand-made
    sequences with a terminal step, from seed 0's initialisation."""
    torch.manual_seed(0)
    main, create = _cfg(tmp_path, prev_action=True)
    main.policy.model.rnn.type = kind
    main.policy.learn.update(learning_rate_q=1e-2, learning_rate_policy=1e-2, learning_rate_alpha=1e-2)
    policy = create_policy(compile_config(main, create, save_cfg=False).policy)
    for step in range(3):
        torch.manual_seed(100 + step)
        policy.learn_mode.forward(_sequences(done_row=1))
    return {key: value.clone() for key, value in policy._model.state_dict().items()}


@pytest.mark.parametrize('kind', ['gru', 'lstm'])
def test_the_recurrent_update_is_pinned_against_silent_change(kind, tmp_path):
    """Weights after three learn steps against those stored when the update was last changed on purpose (rewrite
    them then: ``python -m tests.policy_zoo.test_recurrent_sac``). Another CPU's rounding can flip Adam's step on a
    weight whose gradient is all but zero, so up to 1% of the weights may differ by up to three steps' size; a change
    to the burn-in, the masks, the stored state or the targets moves far more."""
    reference = torch.load(PINNED, weights_only=True)[kind]
    weights = _three_steps(kind, tmp_path)
    assert weights.keys() == reference.keys()
    mine = torch.cat([weights[k].flatten().double() for k in weights])
    theirs = torch.cat([reference[k].flatten().double() for k in weights])
    off = (mine - theirs).abs()
    assert (off > 1e-5).double().mean() <= 0.01 and off.max() <= 3 * 1e-2 + 1e-5, \
        f"{int((off > 1e-5).sum())} of {off.numel()} weights moved from the pinned ones (max {off.max():.2e})"


if __name__ == '__main__':  # the pinned weights, rewritten after an intended change of the recurrent update
    import tempfile
    os.makedirs(os.path.dirname(PINNED), exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        torch.save({kind: _three_steps(kind, pathlib.Path(folder)) for kind in ('gru', 'lstm')}, PINNED)
    print(f"wrote {PINNED}")
