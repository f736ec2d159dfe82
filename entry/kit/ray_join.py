"""Joining Ray, for the parallel pipeline, ``bench --ray`` and ``tune --ray`` alike: where the cluster's address comes
from, checking it within seconds, one message per cause, and the CPUs a run's actors reserve."""
from __future__ import annotations

import logging
import math
import os
import socket
from typing import Any

from easydict import EasyDict


def import_ray(what: str) -> Any:
    """Ray, or ``ImportError`` naming ``what`` needs it and how to install it."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"{what} runs on Ray, which is not installed: pip install 'ding-lite[parallel]' (or pip "
                          f"install ray)") from None
    return ray


def ray_address(par: EasyDict) -> tuple[str | None, str]:
    """``(the cluster address to join, where it came from)``: ``parallel.ray_address``, else ``RAY_ADDRESS`` (which
    ``ray job submit`` sets), else ``(None, '')``: start Ray locally."""
    if par.ray_address is not None:
        return par.ray_address, f"parallel.ray_address={par.ray_address!r}"
    if os.environ.get('RAY_ADDRESS'):
        return os.environ['RAY_ADDRESS'], f"RAY_ADDRESS={os.environ['RAY_ADDRESS']!r}"
    return None, ''


def connect_ray(ray: Any, par: EasyDict) -> tuple[bool, str]:
    """The parallel pipeline's Ray: ``join_ray`` at ``ray_address(par)``, locally with the CPUs the actors need."""
    address, source = ray_address(par)
    return join_ray(ray, address, source, num_cpus=math.ceil(cpus_needed(par)))


def join_ray(ray: Any, address: str | None, source: str = '', num_cpus: int | None = None) -> tuple[bool, str]:
    """Start Ray locally (``address`` None or ``'local'``; ``num_cpus`` where given), join the cluster at
    ``address`` (checked within seconds first: ``ray.init`` would retry for minutes), or use the Ray this process
    runs already; ``(whether to shut it down at the end, where)``. ``ConnectionError`` naming the cause."""
    if ray.is_initialized():
        return False, 'already running in this process'
    local = address in (None, 'local')
    kwargs = dict(include_dashboard=False, logging_level=logging.WARNING)
    try:
        if local:
            ray.init(**kwargs, **({} if num_cpus is None else {'num_cpus': num_cpus}))
        else:
            _reachable(address)
            ray.init(address=address, **kwargs)  # a cluster has its own CPUs: none are asked for
    except Exception as error:  # Ray raises several types for an address it cannot reach
        what = "start Ray locally" if local else f"join Ray at {address!r}{f' (from {source})' if source else ''}"
        raise ConnectionError(f"could not {what}: {_cause(error, local)}") from None
    return True, 'started locally' if local else f"joined {address}{f' (from {source})' if source else ''}"


def _cause(error: Exception, local: bool) -> str:
    """What went wrong, in words, with what to do about it."""
    text = f"{type(error).__name__}: {error}"
    if 'auth' in text.lower():
        return (f"the cluster refused this driver's token ({text.splitlines()[0]}): it runs Ray's token "
                f"authentication (RAY_AUTH_MODE=token); set RAY_AUTH_TOKEN to its token ('ray get-auth-token' on the "
                f"head) or RAY_AUTH_TOKEN_PATH to a file holding it")
    if 'already' in text.lower() and 'init' in text.lower():
        return f"{text}; another Ray instance runs in this process (call ray.shutdown() first, or join it)"
    if isinstance(error, ConnectionError) and not local:  # nobody answers there
        return (f"{text}; start a cluster with 'ray start --head' (and 'ray start --address=HEAD:6379' on the other "
                f"nodes), or run locally")
    return text


def cpus_needed(par: EasyDict) -> float:
    """CPUs the run's actors reserve."""
    return par.collector_num * par.num_cpus_per_collector + 1  # the evaluator takes one


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Fail within seconds where nobody answers at ``address``: a ``[ray://]host:port``, or ``'auto'``: the cluster
    this machine's ``ray start`` recorded."""
    if address == 'auto':
        record = os.path.join(os.environ.get('RAY_TMPDIR', '/tmp'), 'ray', 'ray_current_cluster')
        if not os.path.isfile(record):
            raise ConnectionError(f"no Ray cluster was started on this machine ({record} does not exist)")
        address = open(record).read().strip()
    host, _, port = address.split('://')[-1].rpartition(':')
    if not host or not port.isdigit():
        raise ConnectionError(f"{address!r} is not host:port")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as error:
        raise ConnectionError(f"nothing answers at {host}:{port} ({error})") from None
