"""``ding_lite list``, ``ding_lite config NAME`` and ``ding_lite zoo``: what exists, explained, without the source."""
from __future__ import annotations

import math
import re

import pytest

from ding_lite.config import ConfigError, compile_config, policy_default_config
from ding_lite.registry import BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY
from entry.cli import main
from entry.tools.discover import describe_config, list_registered, zoo_configs


def test_list_prints_every_registered_name_with_its_description(capsys):
    assert main(['list']) == 0
    out = capsys.readouterr().out
    for kind in ('policies:', 'models:', 'envs:', 'env_managers:', 'buffers:', 'wrappers:'):
        assert kind in out
    # the names in one column (as wide as the longest name: other tests' registrations may widen it)
    assert re.search(r'\n  sac +Soft Actor-Critic for Box actions', out)
    assert re.search(r'\n  sac_discrete +alias of discrete_sac', out)
    width = len(re.search(r'\n  (sac +)Soft', out).group(1))
    assert re.search(rf'\n  {"discrete_sac":<{width}}\S', out)
    assert 'envpool' in out and 'tanh_reparam_sample' in out
    assert list_registered('buffers').splitlines()[0] == 'buffers:'
    with pytest.raises(ValueError, match="unknown kind 'polices'; did you mean 'policies'"):
        list_registered('polices')


def _leaf_lines(text):
    """The printed keys with a value (a sub-config's own line may go without a comment: its keys have one)."""
    return [line for line in text.splitlines() if '=' in line and not line.lstrip().startswith('#')
            and '=dict(' not in line]


@pytest.mark.parametrize('registry, kind', [(POLICY_REGISTRY, 'policy'), (ENV_REGISTRY, 'env'),
                                            (ENV_MANAGER_REGISTRY, 'env_manager'), (BUFFER_REGISTRY, 'buffer'),
                                            (MODEL_REGISTRY, 'model')])
def test_config_explains_every_key_and_prints_runnable_source(registry, kind):
    builtin = [name for name in registry.keys()  # other tests register classes of their own
               if registry.get(name).__module__.split('.')[0] in ('ding_lite', 'envs', 'policy_zoo')]
    for name in builtin:
        text = describe_config(name, kind)
        assert text.startswith(f"# {kind} {name!r}")
        lines = _leaf_lines(text)
        undescribed = [line for line in lines if '# (no description)' in line or '  # ' not in line]
        assert not undescribed, f"{kind} {name}: keys without a description: {undescribed}"
        body = text.split('\n', 1)[1]
        section = eval(body.split('=', 1)[1], {'inf': math.inf})  # the printed source is the default config
        expected = policy_default_config(name)[0] if kind == 'policy' else registry.get(name).default_config()
        assert section == expected


def test_config_cli_for_a_policy_and_the_parallel_section(capsys):
    assert main(['config', 'sac']) == 0
    out = capsys.readouterr().out
    assert 'batch_size=256,' in out and '# transitions per learn step' in out
    assert 'replay_buffer_size=1000000,' in out and "learner=dict(" in out and "obs_shape=None," in out
    assert main(['config', 'parallel']) == 0
    assert '# train iterations between weight broadcasts to the actors' in capsys.readouterr().out
    assert main(['config', 'sacc']) == 1
    assert "nothing registered as 'sacc'; did you mean 'sac'?" in capsys.readouterr().err


def test_config_errors_quote_the_suggested_keys_description():
    main_cfg = dict(exp_name='unused', policy=dict(learn=dict(batch_sizee=3)))
    with pytest.raises(ConfigError, match=r"did you mean 'policy.learn.batch_size'\? \(transitions per learn step\)"):
        compile_config(main_cfg, create_cfg=dict(policy=dict(type='sac')), save_cfg=False)
    main_cfg = dict(exp_name='unused', env=dict(manager=dict(step_timout=3)))
    with pytest.raises(ConfigError, match=r"'env.manager.step_timeout'\? \(seconds an env may take for one step"):
        compile_config(main_cfg, create_cfg=dict(policy=dict(type='sac'), env_manager=dict(type='subprocess')),
                       save_cfg=False)


def test_zoo_lists_the_configs_with_their_expected_results(capsys):
    rows = {row['config']: row for row in zoo_configs()}
    assert rows['pendulum_sac_config.py']['policy'] == 'sac' and rows['pendulum_sac_config.py']['stop_value'] == '-250'
    assert rows['pendulum_sac_config.py']['expected'].startswith('-250 at 32k')
    assert rows['cartpole_discrete_sac_config.py']['env'] == 'cartpole CartPole-v1'
    measured = [row for name, row in rows.items() if name != 'cartpole_sqil_discrete_sac_config.py']
    # a measured result, with its budget (an offline config's in learn steps: it takes no env step)
    assert all('env steps' in row['expected'] or 'learn steps' in row['expected'] for row in measured)
    assert main(['zoo']) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ['config', 'env', 'policy', 'stop_value', 'expected']


def test_list_and_config_answer_without_torch_from_a_catalog_kept_current(tmp_path, monkeypatch):
    """``entry/tools/catalog.json`` holds what the live registries print (written in a fresh process: other tests
    register classes of their own); the CLI reads it without importing torch, and where the sources changed it
    answers from the live registries and writes the catalog anew."""
    import json
    import os
    import subprocess
    import sys
    from tests.conftest import ROOT
    from entry.tools import catalog
    written = subprocess.run([sys.executable, '-m', 'entry.tools.catalog'], capture_output=True, text=True,
                             timeout=120, cwd=ROOT)
    assert written.returncode == 0, written.stderr[-2000:]
    with open(catalog.PATH) as f:
        stored = json.load(f)
    assert stored['config']['policy:sac'] == describe_config('sac', 'policy')
    probe = ("import sys\nfrom entry.cli import main\nmain(['list'])\nmain(['config', 'sac'])\n"
             "print('torch loaded' if 'torch' in sys.modules else 'no torch')\n")
    run = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={**os.environ, 'PYTHONPATH': ROOT})
    assert run.returncode == 0 and run.stdout.endswith('no torch\n'), run.stderr[-2000:]
    assert run.stdout.startswith(stored['list'][''] + '\n' + stored['config']['policy:sac'])
    monkeypatch.setattr(catalog, 'PATH', str(tmp_path / 'catalog.json'))  # sources changed since it was written
    (tmp_path / 'catalog.json').write_text(json.dumps({**stored, 'source_hash': 'older sources'}))
    monkeypatch.setattr(catalog, 'build', lambda: {**stored, 'list': {'': 'fresh'}})
    assert catalog.answer('list') is None                                # the live registries answer
    assert catalog.refresh() and catalog.answer('list') == 'fresh'       # and it is written anew
    assert not catalog.refresh()                                         # current: nothing to write


def test_the_catalog_keeps_the_built_in_registrations_only():
    """``catalog.json`` (what ``ding_lite list`` answers from, in any process) is written by whichever process finds it
    stale: one that registered classes of its own (a notebook, a test) writes none of them."""
    from entry.tools import catalog
    from policy_zoo import SACPolicy

    class ProcessOwnSAC(SACPolicy):
        """Registered by this process only."""
    POLICY_REGISTRY.register('process_own_sac_with_a_long_name', ProcessOwnSAC, force_overwrite=True)
    try:
        built = catalog.build()
        assert 'process_own_sac' in list_registered('policies')   # the live answer has it
    finally:
        POLICY_REGISTRY._table.pop('process_own_sac_with_a_long_name')
    assert 'process_own_sac' not in built['list']['policies'] and 'process_own_sac' not in built['list']['']
    assert not any('process_own_sac' in key for key in built['config'])
    assert 'sac' in built['list']['policies'] and 'policy:sac' in built['config']
