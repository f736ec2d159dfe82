"""A run of a user's own registered policy reloads in a fresh process, from any folder: its module is recorded."""
from __future__ import annotations

import os
import pprint
import subprocess
import sys

import pytest

from ding_lite.registry import import_names
from tests.conftest import TINY_CREATE, TINY_PENDULUM

SCRIPT = '''
from policy_zoo import SACPolicy
from ding_lite import POLICY_REGISTRY, serial_pipeline


@POLICY_REGISTRY.register('mean_q_sac')
class MeanQSACPolicy(SACPolicy):
    """SAC whose actor maximises the critics' mean (a user's variant, registered in their own script)."""

    def _actor_loss(self, obs):
        from ding_lite.rl_utils import tanh_gaussian_sample
        action, log_prob = tanh_gaussian_sample(*self._actor(obs))
        q_mean = self._critic(obs, action).mean(0)
        return (self._alpha.value * log_prob - q_mean).mean(), -log_prob.detach()


if __name__ == '__main__':
    main_config = {main}
    create_config = {create}
    serial_pipeline((main_config, create_config), seed=0, max_env_step=120)
'''


def _run(argv: list[str], cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}  # found from the run, not from PYTHONPATH
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_a_policy_registered_in_the_users_script_reloads_in_a_fresh_process_from_another_folder(tmp_path):
    project, elsewhere = tmp_path / 'project', tmp_path / 'elsewhere'
    project.mkdir(), elsewhere.mkdir()
    main = dict(TINY_PENDULUM, exp_name='mine_seed0')
    create = dict(TINY_CREATE, policy=dict(type='mean_q_sac'))
    (project / 'train.py').write_text(SCRIPT.format(main=pprint.pformat(main), create=pprint.pformat(create)))
    run = _run([sys.executable, '-W', 'ignore', 'train.py'], project)
    assert run.returncode == 0, run.stderr[-3000:]
    text = (project / 'mine_seed0' / 'total_config.py').read_text()
    assert "'import_names': ['train']" in text and repr(str(project)) in text

    folder = str(project / 'mine_seed0')
    run = _run(['ding_lite', 'export', folder, '-o', 'actor.pt'], elsewhere)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (elsewhere / 'actor.pt').is_file()
    run = _run(['ding_lite', '-m', 'eval', '-c', f'{folder}/total_config.py', '--load-path',
                f'{folder}/ckpt/ckpt_best.pth.tar', '--episodes', '1'], elsewhere)
    assert run.returncode == 0 and 'return mean' in run.stdout, run.stderr[-3000:]
    code = (f"from entry import load_policy; agent = load_policy({folder!r}); "
            f"print(type(agent.policy).__name__, agent.predict([0.0, 1.0, 0.0]))")
    run = _run([sys.executable, '-W', 'ignore', '-c', code], elsewhere)
    assert run.returncode == 0 and run.stdout.startswith('MeanQSACPolicy'), run.stderr[-3000:]


def test_import_names_finds_a_module_in_the_current_folder_and_says_where_it_looked(tmp_path, monkeypatch):
    (tmp_path / 'here_plugins_xyz.py').write_text('VALUE = 7\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, 'path', [p for p in sys.path if p not in ('', '.', str(tmp_path))])
    import_names(['here_plugins_xyz'])
    assert sys.modules['here_plugins_xyz'].VALUE == 7
    with pytest.raises(ImportError, match=r"'nowhere_xyz' listed in import_names.*looked in sys.path and in "
                                          rf"{tmp_path}, /no/such/folder: run from the folder"):
        import_names(['nowhere_xyz'], ['/no/such/folder'])
    (tmp_path / 'broken_plugins_xyz.py').write_text('import no_such_dependency_xyz\n')
    with pytest.raises(ImportError, match="'broken_plugins_xyz' listed in import_names: No module named "
                                          "'no_such_dependency_xyz'$"):
        import_names(['broken_plugins_xyz'])
