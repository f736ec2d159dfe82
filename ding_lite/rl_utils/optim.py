"""The optimizers' pieces every policy shares: Adam with the fused kernel, a safe state load, one step that returns
the gradients' norm."""
from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor


def make_adam(params: Any, lr: float, betas: tuple[float, float] = (0.9, 0.999), weight_decay: float = 0.0,
              decoupled: bool = False) -> torch.optim.Adam:
    """Adam with the fused kernel where this torch build has it (one op per step instead of one per tensor);
    ``weight_decay``: L2, added to the gradient (Adam's own), or with ``decoupled`` AdamW's (the weights shrink by
    ``lr * weight_decay`` a step)."""
    params, betas = list(params), tuple(betas)
    if decoupled:
        try:
            return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay, fused=True)
        except (RuntimeError, TypeError):
            return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay)
    try:
        return FusedAdam(params, lr=lr, betas=betas, weight_decay=weight_decay, fused=True)
    except (RuntimeError, TypeError):  # older torch: no fused kernel for this device
        return torch.optim.Adam(params, lr=lr, betas=betas, weight_decay=weight_decay)


def load_optimizer(optimizer: torch.optim.Optimizer, state: dict) -> None:
    """``optimizer.load_state_dict`` on a copy of ``state``: torch keeps a loaded tensor that is already on the
    parameter's device and dtype, so two optimizers loading one state would share (and both step) its moments."""
    optimizer.load_state_dict(copy.deepcopy(state))


def _undecorated(name: str) -> Any:
    """``Optimizer.<name>`` without torch's dynamo guard (``torch._disable_dynamo``), whose first call imports the
    compiler stack: 0.8 s of a process's start, for methods no compiled region calls."""
    method = getattr(torch.optim.Optimizer, name)
    return getattr(method, '__wrapped__', method)


class FusedAdam(torch.optim.Adam):
    """``Adam(fused=True)`` whose ``step`` and ``zero_grad`` skip the optimizer's per-call bookkeeping: the same
    fused kernel on the same state tensors, made as ``Adam.step`` makes them on the first step (saves ~0.1 ms a
    step on a CPU, where SAC's small updates take ~2 ms). Anything unusual (a closure, a missing grad, AMSGrad)
    takes ``Adam.step``. Its bookkeeping methods skip torch's dynamo guard (``_undecorated``)."""

    add_param_group = _undecorated('add_param_group')
    state_dict = _undecorated('state_dict')
    load_state_dict = _undecorated('load_state_dict')

    def step(self, closure: Any = None) -> Any:
        scaled = getattr(self, 'found_inf', None) is not None  # a GradScaler's step (fp16): Adam.step honours it
        groups = self._fast_groups() if closure is None and not scaled else None
        if groups is None:
            return super().step(closure)
        for params, exp_avgs, exp_avg_sqs, steps, group in groups:
            grads = [p.grad for p in params]
            torch._foreach_add_(steps, 1)
            beta1, beta2 = group['betas']
            torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False, lr=group['lr'],
                               beta1=beta1, beta2=beta2, weight_decay=group['weight_decay'], eps=group['eps'],
                               maximize=group['maximize'], grad_scale=None, found_inf=None)
        return None

    def zero_grad(self, set_to_none: bool = True) -> None:
        if not set_to_none:
            return super().zero_grad(set_to_none)
        for group in self.param_groups:
            for param in group['params']:
                param.grad = None

    def _fast_groups(self) -> list | None:
        """Per param group ``(params, exp_avgs, exp_avg_sqs, steps, group)`` from the live state (made where a
        parameter has none yet, as ``Adam.step`` makes it); None where the fast path does not apply (a missing
        grad among them)."""
        groups = []
        for group in self.param_groups:
            params = group['params']
            if group['amsgrad'] or group['differentiable'] or not group['fused'] or \
                    group.get('decoupled_weight_decay') or len({(p.device, p.dtype) for p in params}) > 1:
                return None
            states = []
            for param in params:
                if param.grad is None:
                    return None
                if param not in self.state:  # Adam's first step's state: moments of zeros, a float32 step count
                    self.state[param] = {'step': torch.zeros((), dtype=torch.float32, device=param.device),
                                         'exp_avg': torch.zeros_like(param, memory_format=torch.preserve_format),
                                         'exp_avg_sq': torch.zeros_like(param, memory_format=torch.preserve_format)}
                elif 'exp_avg' not in self.state[param]:
                    return None
                states.append(self.state[param])
            groups.append((params, [s['exp_avg'] for s in states], [s['exp_avg_sq'] for s in states],
                           [s['step'] for s in states], group))
        return groups


def optimizer_step(optimizer: torch.optim.Optimizer, loss: Tensor, seed_axis: bool = False,
                   scaler: torch.amp.GradScaler | None = None) -> Tensor:
    """One step of ``optimizer`` on ``loss``; returns the gradients' total 2-norm (a tensor: no host sync). With
    ``seed_axis``, ``loss`` is ``[S]`` over parameters stacked on a leading seed axis: each seed's gradient comes
    from its own loss, and the norms are per seed ``[S]``. With a gradient ``scaler`` (fp16), the loss is scaled
    for the backward pass and the gradients unscaled before the norm; a step with inf/NaN gradients is skipped, and
    its norm given as 0."""
    optimizer.zero_grad(set_to_none=True)
    loss = loss.sum() if seed_axis else loss
    (loss if scaler is None else scaler.scale(loss)).backward()
    if scaler is not None:
        scaler.unscale_(optimizer)
    grads = [p.grad for group in optimizer.param_groups for p in group['params'] if p.grad is not None]
    if seed_axis:
        norm = torch.linalg.vector_norm(torch.cat([g.reshape(len(g), -1) for g in grads], 1), dim=1)
    else:
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))) if grads else loss.new_zeros(())
    if scaler is None:
        optimizer.step()
        return norm
    scaler.step(optimizer)
    scaler.update()
    return torch.nan_to_num(norm, nan=0.0, posinf=0.0)  # a step the scaler skipped (its scale still settling): 0


__all__ = ['make_adam', 'load_optimizer', 'optimizer_step', 'FusedAdam']
