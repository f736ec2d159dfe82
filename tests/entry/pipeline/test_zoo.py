"""Every config in ``dizoo_configs/`` compiles and trains a few hundred env steps (shrunk: short episodes, one
evaluation episode), through the pipeline it is made for (an offline config a few learn steps from a file)."""
from __future__ import annotations

import glob
import os

import pytest

from ding_lite.config import compile_config
from entry import serial_pipeline, serial_pipeline_offline, serial_pipeline_sqil
from tests.conftest import ROOT, synthetic_demo, zoo_config

CONFIGS = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, 'dizoo_configs', '*_config.py')))


def _shrunk(name, tmp_path):
    main, create = zoo_config(name, tmp_path / 'run')
    main.env.update(evaluator_env_num=1, n_evaluator_episode=1)
    if create.env.type == 'pettingzoo_team':  # many agents: short episodes in the env's own keys
        main.env.max_cycles = 10
    elif create.env.type == 'pettingzoo_agents':
        main.env.env_kwargs.max_cycles = 10
    else:
        main.env.env_kwargs = dict(max_episode_steps=60)
    main.policy.random_collect_size = min(main.policy.get('random_collect_size', 0), 100)
    if create.policy.type in ('simba', 'simba_v2'):  # the papers' critics (4M weights) take 0.4 s an update here
        main.policy.setdefault('model', {}).update(actor_hidden_dim=16, critic_hidden_dim=32)
    demos = [signal for signal in (main.policy.get('reward_signals') or {}).values() if 'demo_path' in signal]
    demos += [main.policy.behavioral_cloning] if main.policy.get('behavioral_cloning') else []
    for settings in demos:  # GAIL's and cloning's demonstrations: a synthetic file of the env's shapes
        settings.demo_path = synthetic_demo(tmp_path / 'demo.pt', obs_dim=main.policy.model.obs_shape,
                                            act_dim=main.policy.model.action_shape)
    return main, create


@pytest.mark.parametrize('name', CONFIGS)
def test_zoo_config_compiles_and_trains(name, tmp_path):
    main, create = _shrunk(name, tmp_path)
    if 'sqil' in name:
        cfg = compile_config(main, create, save_cfg=False)
        discrete = cfg.policy.type == 'discrete_sac'
        model = cfg.policy.model
        obs = model.get('obs_shape') or model.get('agent_obs_shape')
        demo = synthetic_demo(tmp_path / 'demo.pt', obs_dim=obs, act_dim=model.action_shape, discrete=discrete,
                              env_id='CartPole-v1' if discrete else 'Pendulum-v1')
        serial_pipeline_sqil((main, create), seed=0, expert_data_path=demo, max_env_step=300)
    elif 'data_path' in main.policy.learn:  # an offline config: the file it names is the user's, a synthetic one here
        main.policy.learn.data_path = synthetic_demo(tmp_path / 'data.pt', obs_dim=main.policy.model.obs_shape,
                                                     act_dim=main.policy.model.action_shape)
        main.policy.eval.evaluator.eval_freq = 20
        serial_pipeline_offline((main, create), seed=0, max_train_iter=40)
    else:
        serial_pipeline((main, create), seed=0, max_env_step=300)
    rows = (tmp_path / 'run' / 'log' / 'evaluator.csv').read_text().splitlines()
    assert len(rows) >= 2 and (tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar').is_file()
