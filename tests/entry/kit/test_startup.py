"""A process starts without what nothing uses yet: no compiler stack for the optimizers, no source read for the
config keys' descriptions (only an error's did-you-mean prints them)."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

PROBE = '''
import sys
from ding_lite.config import compile_config, read_config
from ding_lite.utils.default_config import _declared_comments
from entry.kit.run_parts import create_run_policy
import torch

main, create = read_config('dizoo_configs/pendulum_sac_config.py')
main.exp_name = 'unused'
cfg = compile_config(main, create_cfg=create, save_cfg=False)
policy = create_run_policy(cfg)
batch = {'obs': torch.randn(8, 3), 'next_obs': torch.randn(8, 3), 'action': torch.rand(8, 1) * 2 - 1,
         'reward': torch.randn(8), 'done': torch.zeros(8)}
for _ in range(2):
    policy.learn_mode.forward(batch)
policy.learn_mode.load_state_dict(policy.learn_mode.state_dict())
print('sources read:', _declared_comments.cache_info().currsize, '| dynamo:', 'torch._dynamo' in sys.modules)
'''


def test_a_run_builds_and_learns_without_the_compiler_stack_or_reading_sources():
    run = subprocess.run([sys.executable, '-c', PROBE], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().endswith('sources read: 0 | dynamo: False'), run.stdout[-500:]
