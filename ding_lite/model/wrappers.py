"""Model wrappers: stackable views that add sampling, target-network updates and such around a model."""
from __future__ import annotations

import contextlib
import math
import weakref
from typing import Any, Iterable, Iterator

import torch
from torch import Tensor, nn

from ..registry import WRAPPER_REGISTRY


_MODULE_LISTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its modules, or None: train()


@contextlib.contextmanager
def frozen(params: Iterable[Tensor]) -> Iterator[None]:
    """Graphs built inside compute no gradients for ``params`` (they enter as constants)."""
    params = list(params)
    for param in params:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param in params:
            param.requires_grad_(True)


def set_training(model: Any, mode: bool) -> None:
    """``model.train(mode)`` (a wrapped model's too) without its walk through ``nn.Module.__setattr__`` for every
    module: the flag is set on a cached list of the modules (called twice per env step, once per mode; the walk
    was 14% of a graphed GPU loop). A model where any module overrides ``train`` gets ``model.train(mode)``."""
    base = model.unwrapped if isinstance(model, ModelWrapper) else model
    if base not in _MODULE_LISTS:
        modules = list(base.modules())
        _MODULE_LISTS[base] = None if any(type(m).train is not nn.Module.train for m in modules) else modules
    modules = _MODULE_LISTS[base]
    if modules is None:
        base.train(mode)
        return
    for module in modules:
        object.__setattr__(module, 'training', mode)


class ModelWrapper:
    """Forwards everything it does not define (``state_dict``, ``parameters``, ``train``, ...) to the model."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def __getattr__(self, name: str) -> Any:
        if name == '_model':  # not yet set (copy / unpickling)
            raise AttributeError(name)
        return getattr(self._model, name)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._model.forward(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def reset(self, **kwargs: Any) -> None:
        if hasattr(self._model, 'reset'):
            self._model.reset(**kwargs)

    @property
    def unwrapped(self) -> nn.Module:
        model = self._model
        return model.unwrapped if isinstance(model, ModelWrapper) else model

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r})"


WRAPPER_REGISTRY.register('base', ModelWrapper)


def register_wrapper(name: str, wrapper_cls: type, force_overwrite: bool = False) -> type:
    """Register a ``ModelWrapper`` subclass so ``model_wrap(model, name)`` can build it."""
    if not (isinstance(wrapper_cls, type) and issubclass(wrapper_cls, ModelWrapper)):
        raise TypeError(f"wrapper {name!r} must be a ModelWrapper subclass, got {wrapper_cls!r}")
    return WRAPPER_REGISTRY.register(name, wrapper_cls, force_overwrite=force_overwrite)


def model_wrap(model: Any, wrapper_name: str | None = None, **kwargs: Any) -> ModelWrapper:
    """Wrap ``model`` (a module or an already wrapped one) in the registered wrapper ``wrapper_name``."""
    return WRAPPER_REGISTRY.build(wrapper_name or 'base', model, **kwargs)


@WRAPPER_REGISTRY.register('target')
class TargetNetworkWrapper(ModelWrapper):
    """Frozen copy that follows the online model: Polyak ('momentum', ``theta``) or copy every ``freq`` ('assign')."""

    def __init__(self, model: nn.Module, update_type: str = 'momentum', update_kwargs: dict | None = None) -> None:
        if update_type not in ('momentum', 'assign'):
            raise ValueError(f"target update_type must be 'momentum' or 'assign', got {update_type!r}")
        update_kwargs = dict(update_kwargs or {})
        needed = 'theta' if update_type == 'momentum' else 'freq'
        if needed not in update_kwargs:
            raise ValueError(f"target update_type={update_type!r} needs update_kwargs[{needed!r}]")
        super().__init__(model)
        self._update_type, self._kwargs, self._update_count = update_type, update_kwargs, 0
        self._names = [name for name, _ in model.named_parameters()]
        self._params = [p.requires_grad_(False) for p in model.parameters()]
        self._buffer_names = [name for name, _ in model.named_buffers()]
        self._buffers = list(model.buffers())

    @torch.no_grad()
    def update(self, state_dict: dict[str, Tensor], direct: bool = False) -> None:
        """Move towards ``state_dict`` (the online model's); ``direct`` copies it and restarts the count.

        As DI-engine: 'assign' copies on every ``freq``-th call (counted), 'momentum' moves on every call. Only the
        parameters named in ``state_dict`` move, so a policy may pass just the part it targets.
        """
        pairs = [(p, state_dict[n]) for n, p in zip(self._names, self._params) if n in state_dict]
        if not pairs:
            raise KeyError(f"target update got no parameter of the target model; expected keys like {self._names[:3]}")
        target, source = [p for p, _ in pairs], [s for _, s in pairs]
        if direct:
            self._update_count = 0
            torch._foreach_copy_(target, source)
        elif self._update_type == 'momentum' and isinstance(self._kwargs['theta'], Tensor):
            for t, s in zip(target, source):  # a rate per row of parameters stacked [S, ...] (stacked trials)
                t.lerp_(s, self._kwargs['theta'].view(-1, *[1] * (t.dim() - 1)))
        elif self._update_type == 'momentum':
            torch._foreach_lerp_(target, source, self._kwargs['theta'])  # one fused op, no allocations
        else:
            self._update_count += 1
            if self._update_count % self._kwargs['freq'] != 0:
                return
            torch._foreach_copy_(target, source)
        buffers = [(b, state_dict[n]) for n, b in zip(self._buffer_names, self._buffers) if n in state_dict]
        if buffers:  # running statistics (BatchNorm) follow by copy
            torch._foreach_copy_([b for b, _ in buffers], [s for _, s in buffers])

    def set_theta(self, theta: float | Tensor) -> None:
        """The Polyak rate from the next update on: a float, or ``[S]`` rates, one per row of parameters stacked on
        a leading axis."""
        self._kwargs['theta'] = theta

    def reset(self, target_update_count: int | None = None, **kwargs: Any) -> None:
        """Set the update count (DI-engine: left alone unless given), then reset the wrapped model."""
        if target_update_count is not None:
            self._update_count = target_update_count
        super().reset(**kwargs)


class NoValidActionError(ValueError):
    """A row whose ``action_mask`` allows no action: there is nothing to sample."""

    def __init__(self, rows: list[int], env_ids: list[Any] | None = None) -> None:
        self.rows = rows
        where = f"env(s) {env_ids}" if env_ids is not None else f"batch row(s) {rows}"
        super().__init__(f"action_mask allows no action for {where}; every observation needs one legal action")


def _masked_logit(output: dict[str, Any]) -> Tensor:
    logit = output['logit']
    if output.get('action_mask') is not None:
        mask = output['action_mask'].bool()
        empty = ~mask.any(-1)
        if empty.any():  # one host sync, only where there are masks: a clear error instead of torch's
            raise NoValidActionError(empty.nonzero().flatten().tolist())
        logit = logit.masked_fill(~mask, -math.inf)
    return logit


def _gaussian(output: dict[str, Any]) -> tuple[Tensor, Tensor]:
    """``(mu, sigma)`` from ding_lite's ``logit=[mu, sigma]`` or DI-engine's ``logit={'mu': ..., 'sigma': ...}``."""
    logit = output['logit']
    return (logit['mu'], logit['sigma']) if isinstance(logit, dict) else (logit[0], logit[1])


def _uniform_valid(logit: Tensor) -> Tensor:
    """A uniformly drawn allowed action per row (``[B]``; ``[B, A]`` for a logit per agent)."""
    rows = torch.isfinite(logit).float().reshape(-1, logit.shape[-1])
    return torch.multinomial(rows, 1).reshape(logit.shape[:-1])


def _explore(logit: Tensor, eps: float | Tensor) -> Tensor:
    """Per-row coin flips (per agent where the logit has an agent axis): True with probability ``eps`` (a float or
    a ``[B]`` tensor)."""
    eps = torch.as_tensor(eps, device=logit.device)
    if eps.dim():
        eps = eps.reshape(-1, *[1] * (logit.dim() - 2))
    return torch.rand(logit.shape[:-1], device=logit.device) < eps


@WRAPPER_REGISTRY.register('argmax_sample')
class ArgmaxSampleWrapper(ModelWrapper):
    """Greedy action ``argmax(logit)`` among allowed actions."""

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        output = self._model.forward(*args, **kwargs)
        output['action'] = _masked_logit(output).argmax(-1)
        return output


@WRAPPER_REGISTRY.register('multinomial_sample')
class MultinomialSampleWrapper(ModelWrapper):
    """Action sampled from ``softmax(logit)`` among allowed actions."""

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        output = self._model.forward(*args, **kwargs)
        output['action'] = torch.distributions.Categorical(logits=_masked_logit(output)).sample()
        return output


@WRAPPER_REGISTRY.register('eps_greedy_sample')
class EpsGreedySampleWrapper(ModelWrapper):
    """Greedy action; each row explores uniformly with its own probability ``eps``."""

    def forward(self, *args: Any, eps: float | Tensor, **kwargs: Any) -> dict[str, Any]:
        output = self._model.forward(*args, **kwargs)
        logit = _masked_logit(output)
        output['action'] = torch.where(_explore(logit, eps), _uniform_valid(logit), logit.argmax(-1))
        return output


@WRAPPER_REGISTRY.register('eps_greedy_multinomial_sample')
class EpsGreedyMultinomialSampleWrapper(ModelWrapper):
    """Sample from ``softmax(logit / alpha)`` (DI-engine's ``alpha``, default 1); each row explores uniformly with its
    own probability ``eps``."""

    def forward(self, *args: Any, eps: float | Tensor, alpha: float | None = None, **kwargs: Any) -> dict[str, Any]:
        output = self._model.forward(*args, **kwargs)
        logit = _masked_logit(output)
        sampled = torch.distributions.Categorical(logits=logit if alpha is None else logit / alpha).sample()
        output['action'] = torch.where(_explore(logit, eps), _uniform_valid(logit), sampled)
        return output


@WRAPPER_REGISTRY.register('deterministic_sample')
class DeterministicSampleWrapper(ModelWrapper):
    """Gaussian head (``logit=[mu, sigma]`` or ``{'mu', 'sigma'}``): action ``mu`` (unsquashed, as DI-engine)."""

    squash: bool = False

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        output = self._model.forward(*args, **kwargs)
        mu = _gaussian(output)[0]
        output['action'] = torch.tanh(mu) if self.squash else mu
        return output


@WRAPPER_REGISTRY.register('reparam_sample')
class ReparamSampleWrapper(ModelWrapper):
    """Gaussian head (``logit=[mu, sigma]`` or ``{'mu', 'sigma'}``): action ``mu + sigma * N(0, 1)`` (unsquashed,
    as DI-engine)."""

    squash: bool = False

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        output = self._model.forward(*args, **kwargs)
        mu, sigma = _gaussian(output)
        action = mu + sigma * torch.randn_like(mu)
        output['action'] = torch.tanh(action) if self.squash else action
        return output


@WRAPPER_REGISTRY.register('tanh_deterministic_sample')
class TanhDeterministicSampleWrapper(DeterministicSampleWrapper):
    """Action ``tanh(mu)`` in [-1, 1] (SAC's evaluation action)."""

    squash = True


@WRAPPER_REGISTRY.register('tanh_reparam_sample')
class TanhReparamSampleWrapper(ReparamSampleWrapper):
    """Action ``tanh(mu + sigma * N(0, 1))`` in [-1, 1] (SAC's exploration action)."""

    squash = True


@WRAPPER_REGISTRY.register('hybrid_sample')
class HybridSampleWrapper(ModelWrapper):
    """Hybrid actions ``[choice, box...]``: the choice drawn from its logits, the box ``tanh(mu + sigma * N(0, 1))``
    (``deterministic``: the likeliest choice and ``tanh(mu)``)."""

    deterministic = False

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        output = self._model.forward(*args, **kwargs)
        mu, sigma = output['logit']
        logit = output['choice_logit']
        choice = logit.argmax(-1) if self.deterministic else torch.multinomial(logit.softmax(-1), 1).squeeze(-1)
        if mu.dim() == logit.dim() + 1:  # a Gaussian per choice [B, K, D]: the chosen one's
            index = choice.view(-1, 1, 1).expand(-1, 1, mu.shape[-1])
            mu, sigma = mu.gather(1, index).squeeze(1), sigma.gather(1, index).squeeze(1)
        box = torch.tanh(mu) if self.deterministic else torch.tanh(mu + sigma * torch.randn_like(mu))
        output['action'] = torch.cat([choice.unsqueeze(-1).to(box.dtype), box], -1)
        return output


@WRAPPER_REGISTRY.register('hybrid_deterministic_sample')
class HybridDeterministicWrapper(HybridSampleWrapper):
    deterministic = True


def _low_to_float32(output: Any) -> Any:
    """``output`` with its bf16/fp16 tensors (nested in dicts, lists, tuples) as float32."""
    if isinstance(output, Tensor):
        return output.float() if output.dtype in (torch.bfloat16, torch.float16) else output
    if isinstance(output, dict):
        return {key: _low_to_float32(value) for key, value in output.items()}
    if isinstance(output, tuple) and hasattr(output, '_fields'):  # a NamedTuple (Memory)
        return type(output)(*(_low_to_float32(value) for value in output))
    if isinstance(output, (list, tuple)):
        return type(output)(_low_to_float32(value) for value in output)
    return output


@WRAPPER_REGISTRY.register('amp')
class AmpWrapper(ModelWrapper):
    """Mixed precision (ALF's ``enable_amp``): the model's forward under ``torch.autocast`` in ``dtype`` (its matrix
    products in bf16 or fp16), its outputs back in float32, so that the losses built from them are float32."""

    def __init__(self, model: Any, device_type: str, dtype: torch.dtype) -> None:
        super().__init__(model)
        self._device_type, self._dtype = device_type, dtype

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with torch.autocast(self._device_type, dtype=self._dtype, cache_enabled=False):  # no cache: graph-safe
            output = self._model.forward(*args, **kwargs)
        return _low_to_float32(output)
