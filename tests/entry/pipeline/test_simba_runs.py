"""SimBa as a user runs it: the ``simba`` policy's paper values and its normaliser in a run, and the network under the
family's other policies (the core tests in ``tests/policy_zoo/test_simba.py``)."""
from __future__ import annotations

import copy

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import ConfigError
from ding_lite.model import SimbaQAC
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def _tiny(tmp_path, policy='simba', **model):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path / policy)
    main.policy.model = EasyDict(actor_hidden_dim=8, critic_hidden_dim=8, **model)
    create = EasyDict(copy.deepcopy(TINY_CREATE))
    create.policy.type = policy
    return main, create


def test_the_simba_policy_has_the_papers_values_and_its_normaliser_moves_with_collected_data_only(tmp_path):
    from entry import serial_pipeline
    policy = serial_pipeline(_tiny(tmp_path), seed=0, max_train_iter=10)
    learn = policy._cfg.learn
    assert isinstance(policy._model, SimbaQAC) and isinstance(policy._optimizer_q, torch.optim.AdamW)
    assert policy._optimizer_q.param_groups[0]['weight_decay'] == 1e-2 and learn.learning_rate_q == 1e-4
    assert learn.update_per_collect == 2 and policy._alpha.target_entropy == -0.5  # -|A| / 2
    norm = policy._model.obs_norm
    collected = policy._cfg.random_collect_size + 10 // learn.update_per_collect * policy._cfg.collect.n_sample
    assert int(norm.count) == collected  # the warm-up's and the rounds' observations; evaluation moved nothing
    obs = torch.randn(4, 3)
    expected = (obs - norm.mean.float()) / (norm.var.float() + 1e-8).sqrt()  # RSNorm, unclipped (the paper's)
    assert torch.allclose(policy._normalize_obs(obs), expected, atol=1e-5)  # what every mode's forward reads
    saved = torch.load(tmp_path / 'simba' / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)
    assert torch.equal(saved['model']['obs_norm.mean'], norm.mean)  # saved (and resumed, exported) with the model


def test_the_network_under_the_familys_policies_and_what_it_refuses(tmp_path):
    from entry import serial_pipeline
    for policy in ('tqc', 'redq', 'simba', 'droq'):  # quantiles, an ensemble of 10, AdamW, dropout; seeds stacked
        policies = serial_pipeline(_tiny(tmp_path, policy, type='simba_qac'), seed=[0, 1], max_train_iter=4)
        assert len(policies) == 2 and isinstance(policies[0]._model, SimbaQAC)
    assert policies[0]._model.critic[0][1].dropout == 0.01
    with pytest.raises(ConfigError, match=r"policy 'crossq' on model 'simba_qac': the model takes no batch_renorm"):
        serial_pipeline(_tiny(tmp_path, 'crossq', type='simba_qac'), seed=0, max_train_iter=4)
    main, create = _tiny(tmp_path, 'simba')
    main.exp_name = str(tmp_path / 'twice')
    main.env.norm_obs = dict(use_norm=True)
    with pytest.raises(ConfigError, match='would normalise them twice'):
        serial_pipeline((main, create), seed=0, max_train_iter=4)
    main.policy.model.obs_norm = False  # env.norm_obs's normaliser instead: one, as the error says
    assert serial_pipeline((main, create), seed=0, max_train_iter=4)._model.obs_norm.clip == 10.0
    main, create = _tiny(tmp_path, 'discrete_sac', type='simba_qac')  # no discrete counterpart: refused by name
    main.env.env_id, create.env = 'CartPole-v1', EasyDict(type='gymnasium')
    with pytest.raises(ConfigError, match=r"policy 'discrete_sac' acts on discrete actions and model 'simba_qac' on "
                                          r"continuous ones; set policy.model.type to a discrete model"):
        serial_pipeline((main, create), seed=0, max_train_iter=4)
    assert not (tmp_path / 'discrete_sac').exists()


def test_simba_v2_trains_its_rates_fall_over_the_budget_and_its_checkpoint_weights_are_on_the_sphere(tmp_path,
                                                                                                      capsys):
    from entry import serial_pipeline
    main, create = _tiny(tmp_path, 'simba_v2', num_bins=11)
    policy = serial_pipeline((main, create), seed=0, max_env_step=200)  # 40 warm-up steps, then 80 learn steps
    assert policy.decay_steps == 80 and policy._optimizer_q.param_groups[0]['lr'] == pytest.approx(5.0625e-5)
    stacked = serial_pipeline((main, create), seed=[1, 2], max_env_step=200)  # two seeds in one update
    assert 'one after another' not in capsys.readouterr().out and [p.decay_steps for p in stacked] == [80, 80]
    for folder in ('simba_v2', 'simba_v2_seed1', 'simba_v2_seed2'):
        state = torch.load(tmp_path / folder / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)['model']
        weights = {k: v for k, v in state.items() if k.endswith('.weight') and 'norm' not in k}
        assert weights and all(torch.allclose(v.norm(dim=-1), torch.ones(v.shape[:-1]), atol=1e-5)
                               for v in weights.values())
        assert state['reward_norm.count'] == 200 and state['support'].shape == (11,)  # every collected step's
    main.exp_name = str(tmp_path / 'twice')
    main.env.norm_reward = dict(use_norm=True)
    with pytest.raises(ConfigError, match='would scale them twice'):
        serial_pipeline((main, create), seed=0, max_train_iter=4)
    from entry.parallel.pipeline import parallel_pipeline
    main.env.norm_reward = dict(use_norm=False)
    with pytest.raises(ConfigError, match="reward normalisation.*-m serial"):  # the model's own, in the actors
        parallel_pipeline((main, create), seed=0, max_train_iter=4)
