"""Time to write and to read a full resume checkpoint (Pendulum SAC + replay buffer of 100k and 1M transitions),
against a bare ``torch.save`` of the same tensors, and a bare restore (``torch.load``, the policy's
``load_state_dict``, the buffer's tensors copied into place), in the same process.

Run: ``python -m tests.benchmark.bench_checkpoint`` (or ``make bench``).
"""
from __future__ import annotations

import copy
import os
import tempfile
import time

import torch

from ding_lite.config import compile_config
from ding_lite.data import ReplayBuffer
from ding_lite.worker import BaseLearner
from policy_zoo import create_policy
from tests.benchmark.bench_buffer import _fields
from tests.conftest import zoo_config


def _timed(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run(size: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        main, create = zoo_config('pendulum_sac_config', os.path.join(tmp, 'exp'))
        cfg = compile_config(main, create_cfg=create, save_cfg=False)
        policy = create_policy(cfg.policy, enable_field=['learn'])
        buffer = ReplayBuffer({'replay_buffer_size': size})
        buffer.push(_fields(size))
        learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name=os.path.join(tmp, 'exp'))
        learner.attach('replay_buffer', buffer, buffer=True)
        path = os.path.join(tmp, 'exp', 'ckpt', 'bench.pth.tar')
        write = _timed(lambda: learner.save_checkpoint('bench.pth.tar', resume_point=True))
        read = _timed(lambda: learner.resume(path))
        bare_state = {'policy': copy.deepcopy(policy.learn_mode.state_dict()), 'buffer': _fields(size)}
        bare_path = os.path.join(tmp, 'bare.pt')
        bare_write = _timed(lambda: torch.save(bare_state, bare_path))
        storage = {k: torch.empty_like(v) for k, v in bare_state['buffer'].items()}

        def bare_restore() -> None:  # the same work as resume: read, load the policy's state, fill the buffer
            state = torch.load(bare_path, weights_only=True)
            policy.learn_mode.load_state_dict(state['policy'])
            for key, value in state['buffer'].items():
                storage[key].copy_(value)
        bare_read = _timed(bare_restore)
        mb = os.path.getsize(path.replace('.pth.tar', '.buffer.pth.tar')) / 2 ** 20
    return {'size': size, 'buffer_MiB': mb, 'write_s': write, 'read_s': read, 'bare_write_s': bare_write,
            'bare_read_s': bare_read}


def main() -> None:
    for size in (100_000, 1_000_000):
        r = run(size)
        print(f"{size:>9,} transitions ({r['buffer_MiB']:.0f} MiB buffer file): write {r['write_s']:.3f} s "
              f"(bare torch.save {r['bare_write_s']:.3f} s, ratio {r['write_s'] / r['bare_write_s']:.2f}), "
              f"read {r['read_s']:.3f} s (bare torch.load + restore {r['bare_read_s']:.3f} s, "
              f"ratio {r['read_s'] / r['bare_read_s']:.2f})")


if __name__ == '__main__':
    main()
