"""``ray job submit -- ding_lite -m parallel -c cfg.py`` against a Ray started with ``ray start --head``: the
default config joins the cluster through the RAY_ADDRESS the job gets. Its own module: no other Ray is up meanwhile,
and only the processes of this test's Ray are stopped afterwards."""
from __future__ import annotations

import os
import pprint
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from ding_lite.utils import load_file
from tests.conftest import ROOT, TINY_CREATE, TINY_PENDULUM

pytest.importorskip('ray.dashboard', reason="ray job submit needs Ray's job server: pip install 'ding-lite[parallel]'")
pytest.importorskip('aiohttp', reason="ray job submit needs Ray's job server: pip install 'ding-lite[parallel]'")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _stop(ray_dir: str) -> None:
    """Stop the processes of the Ray whose files are in ``ray_dir`` (``ray stop`` would stop every Ray here)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            if ray_dir.encode() in open(f'/proc/{pid}/cmdline', 'rb').read():
                pids.append(int(pid))
        except OSError:
            continue
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(1.0)


@pytest.mark.slow  # 22-29 s: a Ray head with its dashboard, then a job (run it with: pytest -m slow)
@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='reads /proc to stop its Ray')
def test_ray_job_submit_runs_the_default_config(tmp_path):
    ray_dir = tempfile.mkdtemp(prefix='dl_job_')  # short: Ray's socket paths
    env = {**os.environ, 'RAY_TMPDIR': ray_dir, 'RAY_AUTH_MODE': 'disabled', 'RAY_ADDRESS': '', 'PYTHONPATH': ROOT}
    config = tmp_path / 'cfg.py'
    main = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'run'))
    config.write_text(f"main_config = {pprint.pformat(main)}\ncreate_config = {pprint.pformat(TINY_CREATE)}\n")
    dashboard = _free_port()
    try:
        started = subprocess.run(['ray', 'start', '--head', '--num-cpus', '3', '--port', str(_free_port()),
                                  '--include-dashboard', 'true', '--dashboard-port', str(dashboard),
                                  '--disable-usage-stats'], env=env, capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stdout + started.stderr
        job = subprocess.run(['ray', 'job', 'submit', '--address', f'http://127.0.0.1:{dashboard}', '--',
                              'ding_lite', '-m', 'parallel', '-c', str(config), '-s', '0', '--max-env-step', '200'],
                             env=env, capture_output=True, text=True, timeout=300)
        output = job.stdout + job.stderr
        assert job.returncode == 0 and 'succeeded' in output, output
        assert 'ray joined ' in open(tmp_path / 'run' / 'log' / 'parallel.txt').read()
        assert '(from RAY_ADDRESS=' in output
        assert load_file(str(tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar'))['last_envstep'] >= 200
    finally:
        _stop(ray_dir)
        shutil.rmtree(ray_dir, ignore_errors=True)
