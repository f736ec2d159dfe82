"""Parameter resets (the primacy bias): the schedule's arithmetic and what a reset puts back, by hand."""
from __future__ import annotations

import copy

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import ConfigError, compile_config
from ding_lite.data.collate import default_collate
from policy_zoo import create_policy
from policy_zoo.param_resets import ParamResets
from tests.conftest import TINY_CREATE, TINY_PENDULUM


def test_the_schedule_as_a_list_or_a_period_and_what_it_refuses():
    listed = ParamResets([100, 300])
    assert [listed.passed(s) for s in (99, 100, 299, 300, 10**6)] == [0, 1, 1, 2, 2]
    assert not listed.due(99) and listed.due(100)
    listed.done = 1
    assert not listed.due(250) and listed.due(300)
    period = ParamResets(250)
    assert [period.passed(s) for s in (249, 250, 999, 1000)] == [0, 1, 3, 4] and not ParamResets(None).on
    for bad in ([300, 100], [0], 'often', -5, [100, 100]):
        with pytest.raises(ConfigError, match=r"param_resets=.*expected env steps in increasing order"):
            ParamResets(bad)


def _policy(tmp_path, **learn):
    main = EasyDict(copy.deepcopy(TINY_PENDULUM))
    main.exp_name = str(tmp_path)
    main.policy.learn.update(learn)
    main.env.norm_obs = dict(use_norm=True)
    return create_policy(compile_config(main, create_cfg=EasyDict(copy.deepcopy(TINY_CREATE)), save_cfg=False).policy)


def _batch():
    torch.manual_seed(1)
    return default_collate([{'obs': torch.randn(3), 'next_obs': torch.randn(3), 'action': torch.rand(1) * 2 - 1,
                             'reward': torch.randn(()), 'done': torch.tensor(False)} for _ in range(16)])


def test_a_reset_puts_back_networks_targets_temperature_and_optimizers_and_keeps_the_data_statistics(tmp_path):
    from ding_lite.model import RunningObsNorm
    torch.manual_seed(0)
    policy = _policy(tmp_path, param_resets=[100], learning_rate_alpha=1e-2)
    policy._model.obs_norm = policy._obs_norm = RunningObsNorm(3)  # as the pipelines attach env.norm_obs's
    policy._model.obs_norm.update(torch.randn(50, 3) * 3)
    before = copy.deepcopy(policy._model.state_dict())
    for _ in range(5):
        policy.learn_mode.forward(_batch())
    assert policy.param_reset(99) is None  # not yet
    torch.manual_seed(7)
    fresh = _policy(tmp_path / 'fresh', learning_rate_alpha=1e-2)  # what a newly built policy draws from there
    torch.manual_seed(7)
    said = policy.param_reset(120)
    assert 'parameter reset 1 at env step 120' in said and 'observation normaliser: kept' in said
    for key, value in fresh._model.state_dict().items():
        if key.startswith('obs_norm.'):  # the data's statistics stay
            assert torch.equal(policy._model.state_dict()[key], before[key])
        else:
            assert torch.equal(policy._model.state_dict()[key], value), key
    target = policy._target_model.state_dict()
    assert all(torch.equal(target[k], v) for k, v in fresh._target_model.state_dict().items() if k in target)
    assert policy._optimizer_q.state_dict()['state'] == {} and policy._optimizer_policy.state_dict()['state'] == {}
    assert policy._alpha.raw.item() == pytest.approx(fresh._alpha.raw.item())
    assert policy._alpha.optimizer.state_dict()['state'] == {}
    assert policy.param_reset(130) is None and policy._state_dict_learn()['param_resets_done'] == 1  # once


def _flat(value, prefix=''):
    """A learn state's leaves by path (nested dicts of tensors and numbers)."""
    if isinstance(value, dict):
        return {k: v for key, sub in value.items() for k, v in _flat(sub, f'{prefix}{key}/').items()}
    return {prefix: value}


@pytest.mark.parametrize('policy_type', ['sac_v1', 'discrete_sac', 'tqc', 'redq', 'droq', 'crossq', 'cql_lagrange',
                                         'sac_n', 'edac', 'simba', 'simba_v2'])
def test_a_reset_across_the_family_starts_every_learned_part_again(policy_type):
    """Every entry of the learn state a newly built policy has (value networks, BatchRenorm's statistics, CQL's
    Lagrange weight and its optimizer, the ensembles) is that policy's after a reset; the learn-step count and the
    model's data statistics (SimBa's and SimbaV2's normalisers) stay; the next update runs."""
    from tests.entry.pipeline.test_seeds import _batch as family_batch, _policy_cfg

    def build():
        cfg = _policy_cfg(policy_type)
        cfg.learn.param_resets = [10]
        return create_policy(cfg)
    discrete = policy_type == 'discrete_sac'
    torch.manual_seed(0)
    policy = build()
    for _ in range(3):
        policy._forward_learn(family_batch(discrete))
    before = _flat(policy._state_dict_learn())
    torch.manual_seed(5)
    fresh = _flat(build()._state_dict_learn())
    torch.manual_seed(5)
    assert 'parameter reset 1 at env step 12' in policy.param_reset(12)
    after = _flat(policy._state_dict_learn())
    assert after.keys() == fresh.keys() and after['learn_steps/'] == 3 and after['param_resets_done/'] == 1
    for path, value in after.items():
        if path in ('learn_steps/', 'param_resets_done/'):
            continue
        kept = path.startswith(('model/obs_norm.', 'model/reward_norm.', 'target_model/obs_norm.',
                                'target_model/reward_norm.'))
        expected = before[path] if kept else fresh.get(path)
        same = torch.equal(value, expected) if isinstance(value, torch.Tensor) else value == expected
        assert same, path
    policy._forward_learn(family_batch(discrete))
