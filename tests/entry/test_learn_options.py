"""ALF's and Coach's learn options: partial checkpoint loads, optimiser knobs, reward normalisation, episode metrics."""
from __future__ import annotations

import copy
import os

import pytest
import torch

from entry import serial_pipeline
from entry.pipeline.config_input import compile_run
from entry.pipeline.life_cycle import closing
from entry.pipeline.steps import build_serial


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
