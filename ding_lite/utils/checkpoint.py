"""Crash-safe file I/O: write a temp file beside the target, fsync, rename over it, fsync the directory.

Files are read back with ``torch.load(weights_only=True)``: tensors and plain containers only, never pickled code.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import signal
import tempfile
import threading
from typing import Any, Callable, Iterator

import numpy as np
import torch


def _fsync_dir(directory: str) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block is done, then take their course: a KeyboardInterrupt raised inside
    ``torch.save``'s writer turns into a RuntimeError or aborts the process (a second Ctrl-C during a resume
    point's write did both), and one raised inside tensorboardX's ``add_scalar`` can leave its queue's lock held,
    so that closing the writer hangs for ever. Python runs signal handlers in the main thread only: elsewhere
    nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[tuple[int, Any]] = []
    previous = {number: signal.signal(number, lambda *args: caught.append(args))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number in (signal.SIGTERM, signal.SIGINT):  # SIGINT's last: a handler that raises leaves none behind
            signal.signal(number, previous[number])
        for number, frame in caught:  # in order: a graceful handler's second call exits
            handler = previous[number]
            if callable(handler):
                handler(number, frame)          # Python's KeyboardInterrupt, or the run's graceful handler
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), number)    # the default action, now


def _atomic(path: str, write: Callable[[Any], None], mode: str) -> None:
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', suffix='.tmp', dir=directory)
    with signals_deferred():
        try:
            with os.fdopen(fd, mode) as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
    _fsync_dir(directory)


def atomic_write_text(path: str, text: str) -> None:
    """Replace ``path`` with ``text``; a crash leaves either the old file or the new one."""
    _atomic(path, lambda f: f.write(text), 'w')


def save_file(path: str, obj: Any) -> None:
    """``torch.save`` to ``path`` atomically; ``obj`` must hold only tensors and plain containers (see
    ``to_safe``), so that ``load_file`` can read it without unpickling code. A tensor that views a larger storage
    (one seed's slice of a many-seed run's stacked tensors) is written alone, not with the whole storage."""
    _atomic(path, lambda f: torch.save(_own_storage(obj), f), 'wb')


def _own_storage(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.clone() if obj.untyped_storage().nbytes() > obj.numel() * obj.element_size() else obj
    if isinstance(obj, dict):
        return {k: _own_storage(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and not hasattr(obj, '_fields'):
        return type(obj)(_own_storage(v) for v in obj)
    return obj


def load_file(path: str, what: str = 'checkpoint') -> Any:
    """``torch.load(weights_only=True)`` with one clear error for a missing, unreadable or unsafe file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what} not found: {path}")
    try:
        return torch.load(path, map_location='cpu', weights_only=True)
    except pickle.UnpicklingError as error:
        unsafe = next((line.strip() for line in str(error).splitlines() if 'Unsupported global' in line), None)
        if unsafe is None:
            raise ValueError(f"{what} {path} is not a readable torch file (truncated or foreign?)") from None
        raise ValueError(f"{what} {path} holds more than tensors and plain containers (pickled objects or code), "
                         f"which ding_lite refuses to load (torch.load(weights_only=True)); re-save it from trusted "
                         f"code as tensors, dicts, lists and numbers. {unsafe.split(' was not')[0]}") from None
    except Exception as error:  # torch raises several types for truncated or foreign files
        raise ValueError(f"{what} {path} is not a readable torch file (truncated or foreign?): {error}") from None


def to_safe(obj: Any) -> Any:
    """``obj`` with numpy arrays and scalars turned into tensors and Python numbers (what ``load_file`` reads)."""
    if isinstance(obj, dict):
        return {k: to_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_safe(v) for v in obj) if not hasattr(obj, '_fields') else [to_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, np.generic):
        return obj.item()
    return obj
