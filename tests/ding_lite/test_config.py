from __future__ import annotations

import pytest

from ding_lite.config import LEGACY_KEYS, ConfigError, ConfigWarning, compile_config, read_config, save_config

pytestmark = pytest.mark.usefixtures('toy_registered')


def _cfgs(**policy):
    main = dict(exp_name='exp', env=dict(collector_env_num=2, stop_value=1.0),
                policy=dict(dict(model=dict(obs_shape=3, action_shape=1)), **policy))
    create = dict(env=dict(type='toy_env'), env_manager=dict(type='base'), policy=dict(type='toy'))
    return main, create


def test_defaults_merged_under_user_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main, create = _cfgs(learn=dict(batch_size=128))
    cfg = compile_config(main, create_cfg=create, seed=3, save_cfg=False)
    assert cfg.policy.learn.batch_size == 128
    assert cfg.policy.learn.discount_factor == 0.99          # from the policy's default
    assert cfg.policy.model.critic_head_hidden_size == 64    # from the model's default
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 10000 and cfg.policy.other.replay_buffer.type == 'naive'
    assert cfg.env.env_id == 'Toy-v0' and cfg.env.collector_env_num == 2 and cfg.env.stop_value == 1.0
    assert cfg.seed == 3 and cfg.policy.type == 'toy' and cfg.policy.device == 'cpu'
    assert not (tmp_path / 'exp').exists()


def test_pair_argument_and_integral_floats(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main, create = _cfgs(other=dict(replay_buffer=dict(replay_buffer_size=1e5)))
    cfg = compile_config((main, create), save_cfg=False)
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 100000
    assert isinstance(cfg.policy.other.replay_buffer.replay_buffer_size, int)


@pytest.mark.parametrize('policy, message', [
    (dict(learn=dict(batch_sizee=3)), "unknown config key 'policy.learn.batch_sizee'; did you mean 'policy.learn.batch_size'?"),
    (dict(lern=dict()), "unknown config key 'policy.lern'; did you mean 'policy.learn'?"),
    (dict(model=dict(obs_shape=3, action_shape=1, twin_critc=True)), "did you mean 'policy.model.twin_critic'?"),
    (dict(learn=dict(batch_size='64')), "'policy.learn.batch_size' must be an int, got '64'"),
    (dict(learn=dict(batch_size=0)), "'policy.learn.batch_size' must be a positive number, got 0"),
    (dict(learn=dict(discount_factor=1.5)), "'policy.learn.discount_factor' must be a number in (0, 1]"),
    (dict(cuda='yes'), "'policy.cuda' must be a bool"),
    (dict(learn=3), "'policy.learn' must be a dict"),
])
def test_bad_policy_values_name_the_path(policy, message):
    main, create = _cfgs(**policy)
    with pytest.raises(ConfigError) as info:
        compile_config(main, create_cfg=create, save_cfg=False)
    assert message in str(info.value)


def test_env_keys_are_those_the_env_declares_and_values_checked():
    main, create = _cfgs()
    main['env']['totally_bogus_key'] = 1
    with pytest.raises(ConfigError, match="unknown config key 'env.totally_bogus_key'; no similar key"):
        compile_config(main, create_cfg=create, save_cfg=False)
    main['env'] = dict(main['env'], totally_bogus_key=None)
    del main['env']['totally_bogus_key']
    main['env']['stop_valu'] = 3
    with pytest.raises(ConfigError, match="unknown config key 'env.stop_valu'; did you mean 'env.stop_value'"):
        compile_config(main, create_cfg=create, save_cfg=False)
    del main['env']['stop_valu']
    main['env']['evaluator_env_num'] = 0
    with pytest.raises(ConfigError, match="'env.evaluator_env_num' must be a positive number"):
        compile_config(main, create_cfg=create, save_cfg=False)


def test_unknown_top_level_and_types():
    main, create = _cfgs()
    main['polcy'] = {}
    with pytest.raises(ConfigError, match="unknown top-level config key 'polcy'; did you mean 'policy'"):
        compile_config(main, create_cfg=create, save_cfg=False)
    main, create = _cfgs()
    create['policy']['type'] = 'tyo'
    with pytest.raises(KeyError, match="did you mean 'toy'"):
        compile_config(main, create_cfg=create, save_cfg=False)


def test_save_and_read_back_equal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main, create = _cfgs(learn=dict(batch_size=32))
    main['env']['max_reward'] = float('inf')
    main['env']['shape'] = (3,)
    cfg = compile_config(main, create_cfg=create, seed=1)
    saved = tmp_path / 'exp' / 'total_config.py'
    assert saved.is_file()
    main2, create2 = read_config(str(saved))
    assert create2.policy.type == 'toy' and create2.env.type == 'toy_env'
    cfg2 = compile_config(main2, create_cfg=create2, seed=1, save_cfg=False)
    assert cfg2 == cfg


def test_save_rejects_unserialisable(tmp_path):
    with pytest.raises(ConfigError, match=r"'main_config.env.fn' cannot be saved"):
        save_config({'env': {'fn': object()}}, str(tmp_path / 'c.py'))
    assert not (tmp_path / 'c.py').exists()


def test_read_config_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match='config file not found'):
        read_config(str(tmp_path / 'missing.py'))
    path = tmp_path / 'half.py'
    path.write_text('main_config = dict()\n')
    with pytest.raises(ConfigError, match='does not define create_config'):
        read_config(str(path))


def test_di_engine_sac_family_keys_are_declared():
    """Keys DI-engine's SAC-family dizoo configs use compile unchanged."""
    main = dict(exp_name='exp', env=dict(collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5,
                                         stop_value=195), policy=dict(
        cuda=False, on_policy=False, priority=False, priority_IS_weight=False, random_collect_size=0,
        multi_agent=False, transition_with_policy_data=False,
        model=dict(obs_shape=4, action_shape=2, twin_critic=True),
        learn=dict(update_per_collect=2, batch_size=64, ignore_done=False, auto_alpha=False, alpha=0.2),
        collect=dict(env_num=8, n_sample=256, unroll_len=1, collector_logit=False),
        command=dict(), eval=dict(evaluator=dict(eval_freq=50), env_num=5),
        other=dict(eps=dict(type='exp', start=0.95, end=0.1, decay=50000),
                   replay_buffer=dict(replay_buffer_size=100000))))
    cfg = compile_config(main, create_cfg=dict(env=dict(type='cartpole'), policy=dict(type='discrete_sac')),
                         save_cfg=False)
    assert cfg.policy.eval.evaluator.n_episode == 5 and cfg.policy.eval.evaluator.stop_value == 195
    assert cfg.policy.collect.collector.type == 'sample' and cfg.policy.learn.learner.hook.save_ckpt_after_iter


def test_existing_run_folder_is_never_overwritten(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main, create = _cfgs(learn=dict(batch_size=32))
    first = compile_config(main, create_cfg=create)
    before = (tmp_path / 'exp' / 'total_config.py').read_text()
    main['policy']['learn']['batch_size'] = 16
    second = compile_config(main, create_cfg=create)
    assert first.exp_name == 'exp' and second.exp_name.startswith('exp_') and second.exp_name != 'exp'
    assert (tmp_path / 'exp' / 'total_config.py').read_text() == before
    assert (tmp_path / second.exp_name / 'total_config.py').is_file()
    assert compile_config(main, create_cfg=create, renew_dir=False).exp_name == 'exp'


def test_di_engine_legacy_keys_are_used_or_ignored_with_a_warning():
    main, create = _cfgs(nstep=1, discount_factor=0.97, expert_random_collect_size=100,
                         collect=dict(save_path='demo.pt', data_type='hdf5'))
    with pytest.warns(ConfigWarning) as record:
        cfg = compile_config(main, create_cfg=create, save_cfg=False)
    messages = [str(w.message) for w in record]
    for ignored in ('policy.nstep', 'policy.discount_factor', 'policy.collect.data_type'):
        assert any(f"'{ignored}' is a DI-engine key that ding_lite does not use" in m for m in messages), ignored
    assert 'nstep' not in cfg.policy and cfg.policy.learn.discount_factor == 0.99      # dropped, not merged
    assert cfg.policy.collect.save_path == 'demo.pt' and cfg.policy.expert_random_collect_size == 100  # used
    assert 'data_type' not in cfg.policy.collect
    assert set(LEGACY_KEYS) >= {'policy.learn.reparameterization', 'policy.collect.state_dict_path'}


def test_legacy_key_values_are_still_checked_and_unknown_keys_still_fail():
    main, create = _cfgs(nstep=3)
    with pytest.raises(ConfigError, match=r"'policy.nstep' must be 1 \(ding_lite computes one-step TD targets\)"):
        compile_config(main, create_cfg=create, save_cfg=False)
    main, create = _cfgs(learn=dict(reparameterisation=True))      # not DI-engine's spelling: not on the list
    with pytest.raises(ConfigError, match="unknown config key 'policy.learn.reparameterisation'"):
        compile_config(main, create_cfg=create, save_cfg=False)


def test_di_engine_import_names_skipped_only_for_builtin_types():
    main = dict(exp_name='exp', env=dict(), policy=dict(model=dict(obs_shape=3, action_shape=1)))
    create = dict(env=dict(type='pendulum', import_names=['dizoo.classic_control.pendulum.envs.pendulum_env']),
                  policy=dict(type='sac', import_names=['ding.policy.sac']))
    with pytest.warns(ConfigWarning, match=r"skipped DI-engine import_names dizoo\..* \(env 'pendulum'\), "
                                           r"ding.policy.sac \(policy 'sac'\)"):
        cfg = compile_config(main, create_cfg=create, save_cfg=False)
    assert cfg.create_config.import_names == []
    create['env'] = dict(type='my_dizoo_env', import_names=['dizoo.my_suite.envs'])   # ding_lite has no such type
    with pytest.raises(ImportError, match="'dizoo.my_suite.envs' listed in import_names"):
        compile_config(main, create_cfg=create, save_cfg=False)


def test_subprocess_manager_takes_di_engine_keys_and_base_ignores_them():
    import envs  # noqa: F401 (registers the managers)
    main, create = _cfgs()
    main['env']['manager'] = dict(shared_memory=False, step_timeout=5)
    create['env_manager'] = dict(type='subprocess')
    cfg = compile_config(main, create_cfg=create, save_cfg=False)
    assert cfg.env.manager.type == 'subprocess'
    assert cfg.env.manager.shared_memory is False and cfg.env.manager.step_timeout == 5
    main['env']['manager'] = dict(shared_memory=False)
    create['env_manager'] = dict(type='base')
    with pytest.warns(ConfigWarning, match="'env.manager.shared_memory' is a DI-engine key"):
        cfg = compile_config(main, create_cfg=create, save_cfg=False)
    assert cfg.env.manager.type == 'base' and 'shared_memory' not in cfg.env.manager


def test_batch_larger_than_the_buffer_is_refused():
    main, create = _cfgs()
    main['policy'] = dict(learn=dict(batch_size=512), other=dict(replay_buffer=dict(replay_buffer_size=256)))
    with pytest.raises(ConfigError, match=r"batch_size=512 is larger than the replay buffer's capacity"):
        compile_config(main, create_cfg=create, save_cfg=False)


def test_config_module_imports_no_worker():
    import ast
    import pathlib
    import ding_lite.config
    tree = ast.parse(pathlib.Path(ding_lite.config.__file__).read_text())
    modules = [node.module or '' for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    modules += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [m for m in modules if 'worker' in m]


def test_seed_suffix_of_exp_name_follows_the_seed(tmp_path):
    from ding_lite.config import seeded_exp_name
    assert seeded_exp_name('pendulum_sac_seed0', 3) == 'pendulum_sac_seed3'
    assert seeded_exp_name('runs/hopper_seed12', 0) == 'runs/hopper_seed0'
    assert seeded_exp_name('pendulum_sac', 3) == 'pendulum_sac'
    assert seeded_exp_name('pendulum_sac_seed0_231123_101010_ab12', 3) == 'pendulum_sac_seed0_231123_101010_ab12'
    main = dict(exp_name=str(tmp_path / 'exp_seed0'), policy=dict(model=dict(obs_shape=3, action_shape=1)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type='sac')), seed=7, save_cfg=False)
    assert cfg.exp_name == str(tmp_path / 'exp_seed7') and cfg.seed == 7
