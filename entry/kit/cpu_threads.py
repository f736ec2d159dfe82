"""torch's CPU threads while a run trains: one for small nets, the free cores for large ones, re-checked as the
machine's load changes (a thread on a core another process holds stalls every other one at each op).

Measured on a 2-core machine (BENCHMARKS.md, "Threads"): Pendulum's SAC (hidden 128, batch 128) updates 1.1x
faster on 2 threads than on 1 when the machine is quiet, and 4x slower beside one busy process; HalfCheetah's
sizes (hidden 256, batch 256) 1.6x faster quiet, 3x slower beside it.
"""
from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import os
import time
from typing import Iterator

import torch
from easydict import EasyDict

from ding_lite.config import ALSO_NAMED, ConfigError

# batch x width^2 of the widest hidden layer below which one thread is as fast as several (Pendulum's 128 x 128^2
# gains 1.1x from a second thread, HalfCheetah's 256 x 256^2 1.6x)
SMALL_WORK = 4 * 128 ** 3
CHECK_SECONDS = 1.0  # the shortest window the load is measured over


def small_nets(cfg: EasyDict, stacked: int = 1) -> bool:
    """Whether the run's update is too small to gain from more threads: MLPs (no images) whose widest hidden
    layer times the batch size (times the ``stacked`` seeds that share the update) is under ``SMALL_WORK``."""
    model = cfg.policy.model
    obs_shape = model.get('obs_shape')
    if isinstance(obs_shape, dict) or isinstance(obs_shape, (list, tuple)) and len(obs_shape) == 3:
        return False  # images: conv layers gain from threads
    widths = [model.get(k) or 0 for k in ('actor_head_hidden_size', 'critic_head_hidden_size')]
    widths += list(model.get('encoder_hidden_size_list') or [])
    return stacked * cfg.policy.learn.batch_size * max(widths, default=0) ** 2 < SMALL_WORK


OVERLAP = (True, False, *ALSO_NAMED['collect.overlap'])  # policy.collect.overlap's values


def overlap_collection(cfg: EasyDict) -> str | None:
    """How the run collects while it learns (``policy.collect.overlap``), None where it collects, stores and learns
    in order. ``'stream'``: in this process from a snapshot of the weights taken before each learn round
    (``Policy.act_from_snapshot``; on CUDA on a stream of its own, so the envs step while the GPU learns);
    ``'process'``: in a forked child process (only the base manager's in-process envs fork). True picks the stream
    on a CUDA learner, else the process; 'auto' too, but on a CPU learner only where it leaves a core to the child
    (small nets on one thread beside another core)."""
    overlap = cfg.policy.collect.get('overlap', False)
    if not (isinstance(overlap, bool) or overlap in OVERLAP[2:]):
        raise ConfigError(f"policy.collect.overlap must be one of {', '.join(map(repr, OVERLAP))}, got {overlap!r}")
    if not overlap:
        return None
    if overlap == 'stream' or overlap in (True, 'auto') and cfg.policy.device != 'cpu':
        return 'stream'
    manager = cfg.env.manager.get('type', 'base')
    forkable = manager == 'base' and 'fork' in mp.get_all_start_methods()
    if overlap != 'auto' and not forkable:
        raise ConfigError(f"policy.collect.overlap={overlap!r} steps the collector's envs in a forked process on a "
                          f"CPU learner, which needs env_manager type 'base' (in-process envs) and the 'fork' start "
                          f"method (Linux), got {manager!r}: set policy.collect.overlap=False or 'stream' (in this "
                          f"process), or env_manager.type='base'")
    if overlap != 'auto':
        return 'process'
    if not forkable or cfg.policy.learn.learner.get('num_threads'):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1
    return 'process' if small_nets(cfg) and cores >= 2 else None


def threads_for(cores: int, others_busy: float, reserved_cpus: float, limit: int) -> int:
    """The threads to use on ``cores`` where other processes keep ``others_busy`` cores busy and ``reserved_cpus``
    are promised to the run's own other processes: the cores left, at least 1 and at most ``limit``."""
    return max(1, min(limit, cores - math.ceil(reserved_cpus) - round(others_busy)))


class CpuThreads:
    """The learner's thread count: ``policy.learn.learner.num_threads`` if set, else 1 for small nets on the CPU,
    else the cores other processes leave free, re-measured by ``check`` (Linux: ``/proc/stat``)."""

    def __init__(self, cfg: EasyDict, reserved_cpus: float = 0, cores: list[int] | None = None,
                 stacked: int = 1) -> None:
        self.limit = torch.get_num_threads()
        fixed = cfg.policy.learn.learner.get('num_threads')
        self._cores = cores or (sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else
                                list(range(os.cpu_count() or 1)))
        self._reserved = reserved_cpus
        self.adaptive = not fixed and not (cfg.policy.device == 'cpu' and small_nets(cfg, stacked))
        self.threads = int(fixed) if fixed else 1 if not self.adaptive else \
            threads_for(len(self._cores), 0.0, reserved_cpus, self.limit)
        self._mark = self._reading()

    def check(self) -> int:
        """Follow what other processes used since the last measurement, at least ``CHECK_SECONDS`` ago (cheap to
        call more often); returns the thread count."""
        if not self.adaptive or self._mark is not None and time.monotonic() - self._mark[2] < CHECK_SECONDS:
            return self.threads
        reading = self._reading()
        if self.adaptive and reading is not None and self._mark is not None:
            (busy, ours, wall), (busy0, ours0, wall0) = reading, self._mark
            others = max(0.0, (busy - busy0) - (ours - ours0)) / max(wall - wall0, 1e-9)
            self.threads = threads_for(len(self._cores), others, self._reserved, self.limit)
            torch.set_num_threads(self.threads)
        self._mark = reading
        return self.threads

    def _reading(self) -> tuple[float, float, float] | None:
        """(CPU seconds our cores spent busy, this process's CPU seconds, wall seconds); None off Linux."""
        try:
            with open('/proc/stat') as f:
                lines = [line.split() for line in f if line.startswith('cpu') and line[3:4].isdigit()]
        except OSError:
            return None
        ticks = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100
        busy = sum(int(f[1]) + int(f[2]) + int(f[3]) + sum(int(v) for v in f[6:9]) for f in lines
                   if int(f[0][3:]) in self._cores)
        return busy / ticks, time.process_time(), time.monotonic()


@contextlib.contextmanager
def learner_threads(cfg: EasyDict, reserved_cpus: float = 0, stacked: int = 1) -> Iterator[CpuThreads]:
    """torch's intra-op threads while the run trains (``CpuThreads``); torch's own setting restored afterwards."""
    previous = torch.get_num_threads()
    threads = CpuThreads(cfg, reserved_cpus, stacked=stacked)
    torch.set_num_threads(threads.threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(previous)
