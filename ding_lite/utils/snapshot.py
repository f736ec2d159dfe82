"""Acting from a snapshot of a model's weights, taken when the run says so: the collect forward of
``policy.collect.overlap`` in the learner's own process (on CUDA, from a stream of its own)."""
from __future__ import annotations

import copy
from typing import Any, Callable

import torch
from torch import Tensor, nn

from .cuda_graph import CudaGraphStep
from .device import indexed, on_stream, outputs_to_host, to_device


class SnapshotActor:
    """A copy of ``model`` for acting, refreshed from it by ``refresh()``, at most one collect round behind.

    On CUDA, ``act`` runs on a side stream that waits only for the last refresh: the learn steps queued after it
    run on the GPU while the host steps the envs with the actions (inputs go through pinned memory, outputs come
    back as host tensors). ``refresh`` copies the weights on the learner's stream, so it waits for nothing on the
    host. With ``graphed``, a forward called with a ``key`` is captured as a CUDA graph per key (and observation
    shape) and replayed: one launch instead of one per kernel. Elsewhere ``act`` runs in order; the actions are the
    same (a CPU test's view of the GPU path). Parameters and buffers under ``skip`` (the critics, the reward
    normaliser) are not copied: acting never reads them.
    """

    def __init__(self, model: nn.Module, device: torch.device, skip: tuple[str, ...] = ('critic', 'reward_norm'),
                 graphed: bool = False) -> None:
        self.model = copy.deepcopy(model).requires_grad_(False)
        live = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        mine = {**dict(self.model.named_parameters()), **dict(self.model.named_buffers())}
        names = [name for name in live if name.split('.')[0] not in skip]
        self._names, self._live, self._copies = names, [live[n] for n in names], [mine[n] for n in names]
        self.device = indexed(device)
        cuda = self.device.type == 'cuda'
        # high priority: the host waits for the forward's few kernels, not for the update's queued behind them
        self._stream = torch.cuda.Stream(self.device, priority=-1) if cuda else None
        self._fresh = torch.cuda.Event() if cuda else None
        self._done = torch.cuda.Event() if cuda else None
        self._graphed, self._graphs = graphed and cuda, {}
        self._pinned: dict[tuple, Tensor] = {}  # a host observation's way to the GPU, one per shape and dtype
        self.refresh()

    def refresh(self) -> None:
        """The model's weights as they stand after the work queued so far (the side stream's forwards first)."""
        with torch.no_grad():
            if self._stream is None:
                torch._foreach_copy_(self._copies, self._live)
                return
            current = torch.cuda.current_stream(self.device)
            current.wait_stream(self._stream)
            torch._foreach_copy_(self._copies, self._live)
            self._fresh.record(current)

    def act(self, forward: Callable[[Tensor], dict[str, Any]], obs: Tensor, key: Any = None) -> dict[str, Any]:
        """``forward(obs)`` on the snapshot's stream; its tensors as host tensors (CUDA), else as they are. ``key``:
        where the same key always means the same ``forward`` (no Python values it reads change), it may be
        replayed from a graph (``graphed``), its outputs copied to the host from the graph's own tensors."""
        if self._stream is None:
            return forward(obs)
        with on_stream(self._stream):
            self._stream.wait_event(self._fresh)
            obs = self._to_device(obs) if isinstance(obs, Tensor) else obs
            if self._graphed and key is not None and isinstance(obs, Tensor):
                step = self._graphs.get(key)
                if step is None:
                    step = self._graphs[key] = CudaGraphStep(lambda batch: forward(batch['obs']), self.device,
                                                             'the collect forward', fresh=False)
                output = step({'obs': obs})
            else:
                output = forward(obs)
            return outputs_to_host(output, lambda: (self._done.record(self._stream), self._done.synchronize()))

    def _to_device(self, obs: Tensor) -> Tensor:
        """``obs`` on the device through a pinned block of its own shape, reused: the last forward, which read it,
        has been waited for."""
        if obs.device.type != 'cpu':
            return to_device(obs, self.device)
        key = (obs.shape, obs.dtype)
        pinned = self._pinned.get(key)
        if pinned is None:
            pinned = self._pinned[key] = torch.empty(obs.shape, dtype=obs.dtype, pin_memory=True)
        pinned.copy_(obs)
        return pinned.to(self.device, non_blocking=True)

    def state_dict(self) -> dict[str, Tensor]:
        return {name: tensor.detach().clone() for name, tensor in zip(self._names, self._copies)}

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        if sorted(state) != sorted(self._names):
            raise ValueError(f"the collect snapshot's tensors are {sorted(self._names)}, the state's {sorted(state)}")
        with torch.no_grad():
            if self._stream is not None:
                torch.cuda.current_stream(self.device).wait_stream(self._stream)
            for name, tensor in zip(self._names, self._copies):
                tensor.copy_(state[name])
            if self._fresh is not None:
                self._fresh.record(torch.cuda.current_stream(self.device))
