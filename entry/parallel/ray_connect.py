"""Joining Ray: where the cluster's address comes from, checking it within seconds, and the CPUs a run's actors
reserve."""
from __future__ import annotations

import logging
import math
import os
import socket
from typing import Any

from easydict import EasyDict


def ray_address(par: EasyDict) -> tuple[str | None, str]:
    """``(the cluster address to join, where it came from)``: ``parallel.ray_address``, else ``RAY_ADDRESS`` (which
    ``ray job submit`` sets), else ``(None, '')``: start Ray locally."""
    if par.ray_address is not None:
        return par.ray_address, f"parallel.ray_address={par.ray_address!r}"
    if os.environ.get('RAY_ADDRESS'):
        return os.environ['RAY_ADDRESS'], f"RAY_ADDRESS={os.environ['RAY_ADDRESS']!r}"
    return None, ''


def connect_ray(ray: Any, par: EasyDict) -> tuple[bool, str]:
    """Start Ray locally with the CPUs the actors need, join the cluster at ``ray_address``'s address (checked
    within seconds), or use the Ray this process runs already; ``(whether to shut it down at the end, where)``."""
    started, where = False, 'already running in this process'
    if not ray.is_initialized():
        address, source = ray_address(par)
        kwargs = dict(include_dashboard=False, logging_level=logging.WARNING)
        try:
            if address is None:
                ray.init(num_cpus=math.ceil(cpus_needed(par)), **kwargs)
            else:
                _reachable(address)
                ray.init(address=address, **kwargs)  # a cluster has its own CPUs: none are asked for
        except Exception as error:  # Ray raises several types for an address it cannot reach
            what = f"join Ray at {address!r} (from {source})" if address else "start Ray locally"
            raise ConnectionError(f"could not {what}: {type(error).__name__}: {error}") from None
        started, where = True, 'started locally' if address is None else f"joined {address} (from {source})"
    return started, where


def cpus_needed(par: EasyDict) -> float:
    """CPUs the run's actors reserve."""
    return par.collector_num * par.num_cpus_per_collector + 1  # the evaluator takes one




def _reachable(address: str, timeout: float = 5.0) -> None:
    """Fail within seconds where nobody answers at ``address`` (``ray.init`` would retry for minutes): a
    ``[ray://]host:port``, or ``'auto'``: the cluster this machine's ``ray start`` recorded."""
    if address == 'auto':
        record = os.path.join(os.environ.get('RAY_TMPDIR', '/tmp'), 'ray', 'ray_current_cluster')
        if not os.path.isfile(record):
            raise ConnectionError(f"no Ray cluster was started on this machine ({record} does not exist); start one "
                                  f"with 'ray start --head', or give the head's host:port")
        address = open(record).read().strip()
    host, _, port = address.split('://')[-1].rpartition(':')
    if not host or not port.isdigit():
        raise ConnectionError(f"{address!r} is not host:port")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as error:
        raise ConnectionError(f"nothing answers at {host}:{port} ({error})") from None
