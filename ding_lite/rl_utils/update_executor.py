"""How a policy's update runs: mixed precision, ``torch.compile``, the CUDA graph, the optimizer steps and the seed
map. One object per policy owns these, so that a policy's file holds its algorithm only."""
from __future__ import annotations

import functools
from typing import Any, Callable

import torch
from easydict import EasyDict
from torch import Tensor, nn

from ..data.graph_draw import Draw, draws_plainly
from ..model.wrappers import model_wrap
from ..utils.compile import compile_or_eager
from ..utils.cuda_graph import CudaGraphStep, cuda_graph_or_eager
from ..utils.default_config import ConfigError
from ..utils.device import indexed
from .optim import optimizer_step

AMP_DTYPES = {'bf16': torch.bfloat16, 'fp16': torch.float16}


def check_amp(learn: EasyDict) -> None:
    """``learn.amp``: None, 'bf16' or 'fp16' (what it meets is the capability declarations')."""
    amp = learn.get('amp')
    if amp not in (None, False) and amp not in AMP_DTYPES:
        raise ConfigError(f"policy.learn.amp must be None (float32), 'bf16' or 'fp16', got {amp!r}")


def amp_dtype(amp: str | None, device: torch.device) -> torch.dtype | None:
    """The autocast dtype of ``learn.amp`` on ``device`` (None: float32), or ``ConfigError`` where the device
    cannot run it."""
    if not amp:
        return None
    if not torch.amp.is_autocast_available(device.type):
        raise ConfigError(f"policy.learn.amp={amp!r}: this torch has no mixed precision on device "
                          f"{device.type!r}; set amp=None")
    if amp == 'bf16' and device.type == 'cuda' and not torch.cuda.is_bf16_supported():
        raise ConfigError(f"policy.learn.amp='bf16': {torch.cuda.get_device_name(device)} has no bfloat16 "
                          f"(NVIDIA Ampere or newer has); use amp='fp16' (with a gradient scaler) or amp=None")
    return AMP_DTYPES[amp]


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


class UpdateExecutor:
    """Runs a policy's update as ``learn`` (its compiled ``policy.learn``) asks: ``amp``, ``compile``, ``cuda_graph``.

    The policy writes its update through ``seedwise(fn, *args)`` (one seed's computation) and ``step(optimizer,
    loss)`` (one optimizer step, its gradients' norm); a run of many seeds maps both over its seed axis
    (``map_seeds``). ``after_step`` registers what follows each step of an optimizer (a weight projection).
    """

    def __init__(self, learn: EasyDict, device: torch.device, what: str) -> None:
        self.amp = amp_dtype(learn.get('amp'), device)
        self.scaler = torch.amp.GradScaler(device.type) if self.amp == torch.float16 else None
        self.compiles, self.graphs = bool(learn.get('compile')), bool(learn.get('cuda_graph'))
        self._device, self._what = device, what
        self._graphed: Any = None
        self._drawn: CudaGraphStep | None = None
        self._after: dict[int, list[Callable[[], None]]] = {}
        self.seedwise: Callable[..., Any] = _call
        self._step: Callable[[torch.optim.Optimizer, Tensor], Tensor] = \
            functools.partial(optimizer_step, scaler=self.scaler)

    def model(self, model: nn.Module | None) -> Any:
        """``model`` as the update runs it: under autocast with ``amp`` (None stays None)."""
        if model is None or self.amp is None:
            return model
        return model_wrap(model, 'amp', device_type=self._device.type, dtype=self.amp)

    def compiled(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` compiled (``learn.compile``; eager, with one warning, where compiling fails)."""
        return compile_or_eager(fn, f"{self._what}'s update")

    def graphed(self, update: Callable[[Any], dict[str, Tensor]]) -> Callable[[Any], dict[str, Tensor]]:
        """``update`` replayed from a captured CUDA graph (``learn.cuda_graph``; eager, with one warning, off CUDA)."""
        self._graphed = cuda_graph_or_eager(update, self._device, f"{self._what}'s update")
        return self._graphed

    def drawn(self, update: Callable[[Any], dict[str, Tensor]], prepare: Callable[[Any], Any]
              ) -> Callable[[Draw], dict[str, Tensor]]:
        """One update on a ``Draw``'s batch, ``update(prepare(draw.gather()))`` (``update`` not graphed): with
        ``cuda_graph`` on a GPU the draw, ``prepare`` and the update are replayed from one captured graph, which also
        sums the statistics (``Summed``: the graph's own tensors, valid until the next step, and their sums)."""
        def step(draw: Draw) -> dict[str, Tensor]:
            return update(prepare(draw.gather()))
        if not self.graphs or self._device.type != 'cuda':
            return step
        self._drawn = CudaGraphStep(step, self._device, f"{self._what}'s draw and update", sums=True)
        return self._drawn

    def draws_in_graph(self, learn: EasyDict, buffer: Any) -> bool:
        """Whether the update can draw ``buffer``'s batches inside its graph (``learn.graph_sample``): a graphed
        update on a GPU, a buffer on that GPU that samples uniformly."""
        return self._drawn is not None and bool(learn.get('graph_sample', True)) and \
            indexed(buffer.device) == indexed(self._device) and draws_plainly(buffer)

    def step(self, optimizer: torch.optim.Optimizer, loss: Tensor) -> Tensor:
        """One step of ``optimizer`` on ``loss`` (through the fp16 gradient scaler with ``amp='fp16'``), then what
        ``after_step`` registered for it; the gradients' total 2-norm (per seed under a seed axis)."""
        norm = self._step(optimizer, loss)
        for after in self._after.get(id(optimizer), ()):
            after()
        return norm

    def after_step(self, optimizer: torch.optim.Optimizer, fn: Callable[[], None]) -> None:
        """Call ``fn()`` after every step of ``optimizer`` (inside the captured graph too)."""
        self._after.setdefault(id(optimizer), []).append(fn)

    def map_seeds(self, seedwise: Callable[..., Any], step: Callable[[torch.optim.Optimizer, Tensor], Tensor]) -> None:
        """Run the per-seed computations through ``seedwise`` and the optimizer steps through ``step``
        (``SeedAxis``: over a leading seed axis)."""
        self.seedwise, self._step = seedwise, step

    def restart(self) -> None:
        """Capture the update again at its next call: the tensors it updates were replaced (a state load)."""
        for graphed in (self._graphed, self._drawn):
            if graphed is not None and hasattr(graphed, 'reset'):
                graphed.reset()


__all__ = ['UpdateExecutor', 'amp_dtype', 'check_amp', 'AMP_DTYPES']
