"""``torch.compile`` with a fallback to eager mode where compiling is not supported."""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

import torch


def compile_or_eager(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``torch.compile(fn)``; if compiling or running the compiled code fails (no C++ compiler, an unsupported
    platform or op), ``fn`` itself from then on, with one warning naming ``what``. A genuine error in ``fn``
    is raised again by the eager call."""
    compiled = torch.compile(fn)
    current = [compiled]

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if current[0] is fn:
            return fn(*args, **kwargs)
        try:
            return compiled(*args, **kwargs)
        except Exception as error:  # torch raises many types while compiling
            current[0] = fn
            reason = str(error).splitlines()[0] if str(error) else ''
            warnings.warn(f"torch.compile of {what} failed ({type(error).__name__}: {reason}); running it in eager "
                          f"mode", RuntimeWarning, stacklevel=2)
            return fn(*args, **kwargs)

    return call
