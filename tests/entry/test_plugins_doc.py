"""The docs' plugin example (docs/plugins.md) runs as it is: as a script, and as the module a config file's
import_names names."""
from __future__ import annotations

import pprint
import subprocess
import sys

from tests.conftest import ROOT


def _example() -> str:
    page = open(f"{ROOT}/docs/plugins.md").read()
    start = page.index('# my_plugins.py')
    return page[start:page.index('```', start)]


def test_the_plugin_example_trains_as_a_script_and_through_a_config_file(tmp_path):
    (tmp_path / 'my_plugins.py').write_text(_example())
    run = subprocess.run([sys.executable, '-W', 'ignore', 'my_plugins.py'], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = (tmp_path / 'to_zero_seed0' / 'log' / 'evaluator.csv').read_text().splitlines()[1:]
    assert float(rows[-1].split(',')[3]) >= -1.5  # it learned: the stop value was reached
    assert 'action_size' in (tmp_path / 'to_zero_seed0' / 'log' / 'learner.txt').read_text()

    main = dict(exp_name=str(tmp_path / 'from_config'), env=dict(collector_env_num=2, evaluator_env_num=1),
                policy=dict(random_collect_size=50, model=dict(obs_shape=1, action_shape=1),
                            learn=dict(batch_size=32, log_action_size=False), collect=dict(n_sample=8)))
    create = dict(env=dict(type='to_zero', import_names=['my_plugins']), policy=dict(type='my_sac'))
    (tmp_path / 'configs').mkdir()
    (tmp_path / 'configs' / 'to_zero_config.py').write_text(
        f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(create)}\n")
    (tmp_path / 'configs' / 'my_plugins.py').write_text(_example())  # beside the config, found there
    run = subprocess.run(['ding_lite', '-m', 'serial', '-c', 'configs/to_zero_config.py', '--max-env-step', '200',
                          '--seeds', '0-1'], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    for seed in (0, 1):
        assert (tmp_path / f'from_config_seed{seed}' / 'ckpt' / 'ckpt_last.pth.tar').is_file()
    summary = (tmp_path / 'from_config_seed0' / 'log' / 'summary.txt').read_text()
    assert 'one after another' not in summary  # the example's hook is mapped over the seeds: one update for both
