"""ReplayBuffer.sample throughput against a bare randint + per-field index_select loop.

Run: ``python -m tests.benchmark.bench_buffer`` (or ``make bench``). Reports samples/s of both and their ratio.
"""
from __future__ import annotations

import time

import torch

from ding_lite.data import ReplayBuffer

SIZE, BATCH, OBS, ACT = 1_000_000, 256, 3, 1  # Pendulum-sized transitions


def _fields(n: int) -> dict[str, torch.Tensor]:
    return {'obs': torch.randn(n, OBS), 'action': torch.rand(n, ACT) * 2 - 1, 'reward': torch.randn(n),
            'next_obs': torch.randn(n, OBS), 'done': torch.zeros(n, dtype=torch.bool)}


def _rate(fn, seconds: float = 2.0) -> float:
    for _ in range(50):
        fn()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            fn()
        calls += 100
    return calls / (time.perf_counter() - start)


def run(rounds: int = 3) -> dict[str, float]:
    torch.set_num_threads(1)
    buffer = ReplayBuffer({'replay_buffer_size': SIZE})
    data = _fields(SIZE)
    for start in range(0, SIZE, 100_000):  # pushed in chunks, as collection would
        buffer.push({k: v[start:start + 100_000] for k, v in data.items()})
    bare = _fields(SIZE)

    def bare_sample() -> dict[str, torch.Tensor]:
        index = torch.randint(SIZE, (BATCH,))
        return {k: v.index_select(0, index) for k, v in bare.items()}

    ratios, framework, baseline = [], [], []
    for _ in range(rounds):  # interleaved rounds so a noisy machine affects both alike
        framework.append(_rate(lambda: buffer.sample(BATCH)))
        baseline.append(_rate(bare_sample))
        ratios.append(framework[-1] / baseline[-1])
    result = {'framework_samples_per_s': max(framework), 'bare_samples_per_s': max(baseline),
              'ratio': sorted(ratios)[len(ratios) // 2]}
    print(f"ReplayBuffer.sample({BATCH}) from {SIZE:,}: {result['framework_samples_per_s']:.0f}/s, "
          f"bare loop {result['bare_samples_per_s']:.0f}/s, ratio (median of {rounds}) {result['ratio']:.2f}")
    return result


if __name__ == '__main__':
    run()
