"""Many seeds in one run: S policies' learn state stacked on a leading seed axis, one update for all of them.

Each seed keeps its own policy object (its collect and eval modes, its checkpoints); after ``SeedAxis(policies)``
their parameters, buffers and Adam states are views into ``[S, ...]`` tensors of one *lead* policy, whose update
maps the seed's computation over the axis (``torch.func.vmap``) and steps stacked Adam (per-seed Adam: nothing
reduces across seeds). A checkpoint of seed k is therefore seed k's state, as a single run writes it.
"""
from __future__ import annotations

import contextlib
import copy
import functools
from typing import Any, Iterator

import torch
from torch import Tensor, nn
from torch.func import vmap

try:  # vmap's own levels (torch.func.vmap is these plus pytree handling and checks)
    from torch._C._functorch import _add_batch_dim, _remove_batch_dim, _vmap_decrement_nesting, \
        _vmap_increment_nesting
except ImportError:  # another torch: torch.func.vmap
    _add_batch_dim = None

from easydict import EasyDict

from ding_lite.capabilities import FEATURES, enabled
from ding_lite.data import Batch
from ding_lite.model.wrappers import ModelWrapper
from ding_lite.rl_utils import optimizer_step
from ding_lite.utils.cuda_graph import CudaGraphStep
from ding_lite.utils.device import indexed, outputs_to_host
from policy_zoo import Policy, SACPolicy, SQILSACPolicy
from ..kit.capabilities import SEEDS


def why_not_vectorised(policy_cls: type, cfg: Any) -> str | None:
    """None where ``SeedAxis`` can run seeds of ``policy_cls`` under ``cfg`` (the policy config) as one update,
    else the reason it cannot."""
    if not issubclass(policy_cls, SACPolicy):
        return f"{policy_cls.__name__} is not on SACPolicy's hooks"
    own = [name for name in ('_update', '_forward_learn', '_actor_step')
           if getattr(policy_cls, name) not in (getattr(SACPolicy, name), getattr(SQILSACPolicy, name))]
    if own:
        return f"{policy_cls.__name__} defines its own {', '.join(own)}"
    for feature in enabled(EasyDict(policy=cfg, env=EasyDict())):  # the seeds pipeline's declarations
        if feature in SEEDS.one_after_another:
            return f"{FEATURES[feature].key}: {SEEDS.one_after_another[feature]}"
    for key in ('compile', 'monitor_cos'):
        if cfg.learn.get(key):
            return f"policy.learn.{key}=True"
    if cfg.learn.learner.get('on_nonfinite') == 'skip':
        return "policy.learn.learner.on_nonfinite='skip'"
    if isinstance(cfg.model.get('obs_shape'), dict):
        return "the observations are a Dict (images beside vectors)"
    if policy_cls.agent_axis:
        return "MASAC's observations are DI-engine's dict (agent_state, global_state)"
    return None


# policy.learn settings the rows of one stacked update (hyperparameter trials) may set apart; the rows' configs must
# agree on everything else
ROW_SETTINGS = ('learning_rate_q', 'learning_rate_policy', 'learning_rate_alpha', 'discount_factor', 'target_theta',
                'alpha', 'target_entropy')


def rows_apart(cfgs: list[Any]) -> str | None:
    """None where the policy configs ``cfgs`` differ in ``ROW_SETTINGS`` at most, else what else differs."""
    def rest(cfg: Any) -> dict:
        cfg = copy.deepcopy(dict(cfg))
        cfg['learn'] = {k: v for k, v in dict(cfg['learn']).items() if k not in ROW_SETTINGS}
        return cfg
    first = rest(cfgs[0])
    for cfg in map(rest, cfgs[1:]):
        keys = sorted(k for k in first.keys() | cfg.keys() if first.get(k) != cfg.get(k))
        keys = [f"learn.{k}" for k in sorted(first['learn'].keys() | cfg['learn'].keys())
                if first['learn'].get(k) != cfg['learn'].get(k)] if keys == ['learn'] else keys
        if keys:
            return f"their policy configs differ in {', '.join(f'policy.{k}' for k in keys)} (rows may set apart " \
                   f"only policy.learn's {', '.join(ROW_SETTINGS)})"
    return None


def scheduled_rates(policy_cls: type, keys: list[str]) -> str | None:
    """Why rows of ``policy_cls`` cannot set the learning rates among ``keys`` (config keys) apart: its update sets
    its rates each step, on a schedule from one start (SimbaV2's); None where they can."""
    rates = [key for key in keys if key.rsplit('.', 1)[-1].startswith('learning_rate')]
    if rates and getattr(policy_cls, 'rate_schedule', False):
        return f"{policy_cls.__name__} sets its learning rates each step (a schedule), so rows cannot set " \
               f"{', '.join(rates)} apart"
    return None


def _rates_per_row(optimizer: torch.optim.Optimizer, rates: Tensor) -> None:
    """``optimizer``, over parameters stacked ``[S, ...]``, steps row k at learning rate ``rates[k]``: its step at
    rate 1, then each row's move scaled by its rate (Adam's move is linear in its rate)."""
    params = [p for group in optimizer.param_groups for p in group['params']]
    weights = [rates.view(-1, *[1] * (p.dim() - 1)) for p in params]
    step = optimizer.step
    for group in optimizer.param_groups:
        group['lr'] = 1.0

    def stepped(*args: Any, **kwargs: Any) -> Any:
        before = [p.detach().clone() for p in params]
        out = step(*args, **kwargs)
        with torch.no_grad():
            for p, b, w in zip(params, before, weights):
                p.copy_(b.lerp_(p, w))
        return out
    optimizer.step = stepped


class StepsApart(ValueError):
    """The seeds' optimizers stand at different steps (a parameter reset at different env steps): no shared update."""


class _Slots:
    """Where each stacked tensor of the lead's modules sits (``module._parameters`` or ``_buffers``, by name), so
    that one seed's slices can stand in for them during a call (what ``functional_call`` does, without its
    per-call walk over the modules)."""

    def __init__(self, modules: list[nn.Module]) -> None:
        self.slots, seen = [], set()
        for module in modules:
            for sub in module.modules():
                for kind in ('_parameters', '_buffers'):
                    for name, tensor in getattr(sub, kind).items():
                        if tensor is not None and id(tensor) not in seen:
                            seen.add(id(tensor))
                            self.slots.append((getattr(sub, kind), name, tensor))
        self.tensors = [tensor for _, _, tensor in self.slots]

    @contextlib.contextmanager
    def holding(self, values: list[Tensor]) -> Iterator[None]:
        for (table, name, _), value in zip(self.slots, values):
            table[name] = value
        try:
            yield
        finally:
            for table, name, tensor in self.slots:
                table[name] = tensor


class SeedAxis:
    """Policies of one class, one per seed, trained by one stacked update (``forward(batches)``)."""

    def __init__(self, policies: list[Policy], randomness: str = 'different') -> None:
        self.policies = list(policies)
        first = self.policies[0]
        reason = why_not_vectorised(type(first), first.cfg)
        if reason is not None:
            raise ValueError(f"these seeds cannot share one update: {reason}")
        self.lead = type(first)(first.cfg, model=copy.deepcopy(first.model))
        steps = {policy.learn_steps for policy in self.policies}
        if len(steps) > 1:
            raise ValueError(f"the seeds stand at different learn steps {sorted(steps)}; a run of many seeds steps "
                             f"them together")
        self.lead.learn_steps = steps.pop()
        self.lead.set_horizon(first.horizon)  # (a schedule over the run reads it: SimbaV2's rates)
        for policy in (self.lead, *self.policies):
            _init_adam_states(policy)
        self._stack()
        reason = rows_apart([policy.cfg for policy in self.policies])
        if reason is not None:
            raise ValueError(f"these rows cannot share one update: {reason}")
        self._row_settings()
        self.lead.executor.map_seeds(self._seedwise, functools.partial(optimizer_step, seed_axis=True))
        self._slots = _Slots([module for _, module in _modules(self.lead)])
        self.randomness = randomness  # vmap's: 'different' noise per seed ('same': every seed draws alike)
        self._device = indexed(self.lead.device)  # (stream calls without an index look the device up each time)
        cuda = self._device.type == 'cuda'
        self._graphs: dict[Any, CudaGraphStep] | None = {} if cuda and first.cfg.learn.get('cuda_graph') else None
        vmap(torch.neg)(torch.zeros(1))  # once through torch.func.vmap: it loads its decompositions on first use

    def forward(self, batches: list[Batch | list[dict]] | Fields) -> dict[str, Tensor]:
        """One update of every seed, seed k on ``batches[k]`` (or row k of every field of one ``Fields``: a
        ``SeedBuffers`` sample, preprocessed for all seeds at once); the outputs stacked, seed k's (as its
        ``learn_mode.forward``) in row k of each field."""
        if isinstance(batches, Fields):
            batch = Fields(self._seedwise(lambda b: dict(self.lead.preprocess_learn(b).items()), batches))
        else:
            batch = _stack([policy.preprocess_learn(b) for policy, b in zip(self.policies, batches)])
        output = self.lead.update(batch)
        for policy in self.policies:  # the update's counter, which the seeds' checkpoints hold
            policy.learn_steps = self.lead.learn_steps
        return output

    def _row_settings(self) -> None:
        """Each row's own ``ROW_SETTINGS`` where the rows set them apart: learning rates per row, the target
        critics' Polyak rates and the temperature's target entropies as ``[S]`` tensors. Each row's initial alpha
        is in its stacked temperature already, and its gamma in its stacked TD target."""
        learns = [policy.cfg.learn for policy in self.policies]
        optimizers, target, alpha = self.lead.row_settings()

        def apart(values: list[float]) -> Tensor | None:
            return torch.tensor(values, device=self.lead.device) if len(set(values)) > 1 else None
        for key, optimizer in optimizers.items():
            rates = apart([float(learn[key]) for learn in learns])
            reason = scheduled_rates(type(self.lead), [key]) if rates is not None else None
            if reason is not None:
                raise ValueError(f"these rows cannot share one update: {reason}")
            if rates is not None and optimizer is not None:
                _rates_per_row(optimizer, rates)
        if target is not None:  # (CrossQ has none)
            thetas = apart([float(learn.target_theta) for learn in learns])
            if thetas is not None:
                target.set_theta(thetas)
        targets = apart([float(policy.row_settings()[2].target_entropy or 0.0) for policy in self.policies])
        if targets is not None and alpha.learned:
            alpha.target_entropy = targets[:, None]

    def can_act(self, mode: str) -> bool:
        """Whether ``act`` gives the seeds' ``mode`` forward: the policy batch-forwards as ``Policy`` does."""
        return self.lead.acts_in_batches(mode)

    def act(self, mode: str, obs: list[Tensor | None], **kwargs: Any) -> list[dict[str, Tensor] | None]:
        """One forward of the seeds' ``mode`` (``'collect'`` or ``'eval'``) on their stacked observations, seed k's
        rows ``obs[k]`` (None: nothing to act on; padded, as are shorter row counts); seed k's outputs, as its own
        ``forward_batch`` gives them (a Gaussian's [mu, sigma] as one [B, 2, A] logit). The collect forward's noise
        comes from the caller's stream, for all seeds."""
        present = [k for k, o in enumerate(obs) if o is not None]
        if mode == 'eval':
            return self._split(self._mapped(self.lead.eval_act, _padded(obs), 'eval'), obs)
        kws = {k: self.policies[k].collect_kwargs(obs[k], **kwargs) for k in present}
        if any(kws[k] != kws[present[0]] for k in present):  # schedules apart: each seed its own forward
            outputs = [self.policies[k].collect_act(obs[k], **kws[k]) if k in kws else None for k in range(len(obs))]
        else:
            # with no keywords the forward is always the same: a graph of it may be replayed
            outputs = self._split(self._mapped(functools.partial(self.lead.collect_act, **kws[present[0]]),
                                               _padded(obs), None if kws[present[0]] else 'collect'), obs)
        for k in present:  # each seed's entropy log
            self.policies[k].record_collect(outputs[k], kws[k])
        return outputs

    def _mapped(self, fn: Any, obs: Tensor, key: str | None) -> dict[str, Any]:
        """``_seedwise(fn, obs)`` as host tensors (one read-back for every seed, not one per seed and field). On a
        GPU with ``learn.cuda_graph``, a forward with a ``key`` is replayed from a CUDA graph captured per key and
        observation shape (one launch instead of one per kernel of every layer)."""
        def forward(o: Tensor) -> dict[str, Tensor]:  # a Gaussian's [mu, sigma] as one [S, B, 2, A] tensor
            return {k: torch.stack(list(v), 2) if isinstance(v, (list, tuple)) and len({t.shape for t in v}) == 1
                    else v for k, v in self._seedwise(fn, o).items()}
        if key is None or self._graphs is None:
            output = forward(obs)
        else:
            step = self._graphs.get(key)
            if step is None:
                step = self._graphs[key] = CudaGraphStep(lambda batch: forward(batch['obs']), self._device,
                                                         f"the seeds' {key} forward", fresh=False)  # read back next
            output = step({'obs': obs})
        if self._device.type != 'cuda':
            return output
        return outputs_to_host(output, torch.cuda.current_stream(self._device).synchronize)

    @staticmethod
    def _split(output: dict[str, Any], obs: list[Tensor | None]) -> list[dict[str, Tensor] | None]:
        return [None if o is None else {key: _rows(value, k, len(o)) for key, value in output.items()}
                for k, o in enumerate(obs)]

    def release(self) -> None:
        """Give every seed its own tensors again (the axis is unusable after): for a seed leaving the run."""
        for policy in self.policies:
            for tensor in _tensors(policy).values():
                tensor.data = tensor.data.clone()
            for state in _adam_states(policy).values():
                state['step'] = state['step'].clone()

    def _stack(self) -> None:
        seeds = [_tensors(policy) for policy in self.policies]
        for path, tensor in _tensors(self.lead).items():
            stacked = torch.stack([seed[path].detach() for seed in seeds])
            tensor.data = stacked
            for k, seed in enumerate(seeds):
                seed[path].data = stacked[k]
        seeds = [_adam_states(policy) for policy in self.policies]
        for path, state in _adam_states(self.lead).items():
            steps = {float(seed[path]['step']) for seed in seeds}
            if len(steps) > 1:
                raise StepsApart(f"the seeds' optimizers stand at different steps {sorted(steps)} ({path}); one "
                                 f"update steps them together")
            state['step'].copy_(seeds[0][path]['step'])
            for seed in seeds:  # one counter for all: the seeds step together
                seed[path]['step'] = state['step']

    def _seedwise(self, fn: Any, *args: Any) -> Any:
        batches = [isinstance(arg, Fields) for arg in args]  # vmapped as plain dicts

        def one(state: list[Tensor], *seed_args: Any) -> Any:
            seed_args = tuple(Fields(arg) if batch else arg for arg, batch in zip(seed_args, batches))
            with self._slots.holding(state):
                return fn(*seed_args)
        args = tuple(dict(arg) if batch else arg for arg, batch in zip(args, batches))
        return _vmap(one, len(self.policies), self.randomness, self._slots.tensors, *args)


def _vmap(fn: Any, size: int, randomness: str, *args: Any) -> Any:
    """``vmap(fn, randomness=randomness)(*args)`` over dim 0 of every tensor in ``args`` (lists, tuples and dicts
    of them), outputs stacked on dim 0. functorch's own levels, without ``vmap``'s Python-side checks: they cost
    ~4 us per tensor, 0.1 ms per call on the ~30 tensors of an actor-critic (a collect forward's time)."""
    if _add_batch_dim is None:
        return vmap(fn, randomness=randomness)(*args)
    level = _vmap_increment_nesting(size, randomness)
    try:
        output = fn(*_map_tensors(lambda t: _add_batch_dim(t, 0, level), args))
        return _map_tensors(lambda t: _remove_batch_dim(t, level, size, 0), output)
    finally:
        _vmap_decrement_nesting()


def _map_tensors(fn: Any, value: Any) -> Any:
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, list) and all(isinstance(v, Tensor) for v in value):  # the slots: one comprehension
        return [fn(v) for v in value]
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(fn, v) for v in value)
    if isinstance(value, dict):
        return {key: _map_tensors(fn, v) for key, v in value.items()}
    return value


def _padded(obs: list[Tensor | None]) -> Tensor:
    """``[S, rows, ...]``: each seed's observations, zero rows after them (and for a seed with none)."""
    rows = max(len(o) for o in obs if o is not None)
    template = next(o for o in obs if o is not None)
    return torch.stack([template.new_zeros((rows, *template.shape[1:])) if o is None else o if len(o) == rows else
                        torch.cat([o, o.new_zeros((rows - len(o), *o.shape[1:]))]) for o in obs])


def _rows(value: Any, seed: int, rows: int) -> Any:
    """Seed ``seed``'s first ``rows`` rows of a stacked output (a tensor, or a list of them: a Gaussian's logit)."""
    if isinstance(value, (list, tuple)):
        return type(value)(_rows(v, seed, rows) for v in value)
    return value[seed, :rows]


class Fields(dict):
    """A learn batch's fields with attribute access (``batch.obs``), as the hooks read a ``Batch``."""

    __getattr__ = dict.__getitem__


def _stack(batches: list[Batch]) -> Fields:
    return Fields({key: torch.stack([batch[key] for batch in batches]) for key in batches[0].keys()})


def _modules(policy: Policy) -> Iterator[tuple[str, nn.Module]]:
    """``(attribute, module)`` of each distinct module a policy holds (wrappers unwrapped)."""
    seen = set()
    for name, value in vars(policy).items():
        module = value.unwrapped if isinstance(value, ModelWrapper) else value
        if isinstance(module, nn.Module) and id(module) not in seen:
            seen.add(id(module))
            yield name.lstrip('_'), module


def _optimizers(policy: Policy) -> Iterator[tuple[str, torch.optim.Optimizer]]:
    for name, value in vars(policy).items():
        if isinstance(value, torch.optim.Optimizer):
            yield name, value
    for name, module in _modules(policy):
        for sub_name, sub in module.named_modules(prefix=name):
            if isinstance(getattr(sub, 'optimizer', None), torch.optim.Optimizer):
                yield f"{sub_name}.optimizer", sub.optimizer


def _tensors(policy: Policy) -> dict[str, Tensor]:
    """Every tensor of a policy's learn state by a path that names it alike in every policy of its class."""
    tensors, seen = {}, set()
    for name, module in _modules(policy):
        for path, tensor in [*module.named_parameters(prefix=name), *module.named_buffers(prefix=name)]:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                tensors[path] = tensor
    for path, state in _adam_states(policy).items():
        tensors |= {f"{path}/{key}": value for key, value in state.items() if key != 'step'}
    return tensors


def _adam_states(policy: Policy) -> dict[str, dict[str, Tensor]]:
    return {f"{name}/{g}.{i}": optimizer.state[param] for name, optimizer in _optimizers(policy)
            for g, group in enumerate(optimizer.param_groups) for i, param in enumerate(group['params'])}


def _init_adam_states(policy: Policy) -> None:
    """Create the Adam state a first step would (zero moments, step 0), so that seeds can share it as views."""
    for name, optimizer in _optimizers(policy):
        if type(optimizer).__name__ not in ('Adam', 'AdamW', 'FusedAdam') or \
                any(g['amsgrad'] for g in optimizer.param_groups):
            raise ValueError(f"{name} is {type(optimizer).__name__}: a run of many seeds stacks Adam's (or AdamW's) "
                             f"state only")
        for group in optimizer.param_groups:
            on_device = group['fused'] or group['capturable']
            for param in group['params']:
                if not optimizer.state[param]:
                    optimizer.state[param] = {
                        'step': torch.zeros((), dtype=torch.float32, device=param.device if on_device else 'cpu'),
                        'exp_avg': torch.zeros_like(param, memory_format=torch.preserve_format),
                        'exp_avg_sq': torch.zeros_like(param, memory_format=torch.preserve_format)}
