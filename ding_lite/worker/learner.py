"""The learner: runs the policy's learn step, logs from tensors every N iterations, saves checkpoints."""
from __future__ import annotations

import copy
import math
import os
from types import SimpleNamespace
from typing import Any

import torch
from easydict import EasyDict
from torch import Tensor

from ..registry import LEARNER_REGISTRY, import_names
from ..utils.checkpoint import atomic_write_text, load_file, save_file, to_safe
from ..utils.seed import get_rng_state, set_rng_state
from ..utils.default_config import class_default_config, with_defaults
from .learner_hook import LearnerHook, add_learner_hook, build_learner_hooks
from .logger import build_logger, format_scalars, write_scalars
from .step_sums import StepSums

CHECKPOINT_KIND = 'ding_lite.checkpoint'
CHECKPOINT_VERSION = 2
LATEST = 'latest'  # names the newest complete resume checkpoint of <exp_name>/ckpt/


class NonFiniteError(FloatingPointError):
    """A loss, gradient statistic or parameter became NaN or infinite."""


class CountVar:
    """An integer counter: DI-engine's ``learner.last_iter`` (``.val``, ``.update(value)``, ``.add(n)``)."""

    def __init__(self, init_val: int = 0) -> None:
        self.val = init_val

    def update(self, val: int) -> None:
        self.val = int(val)

    def add(self, n: int = 1) -> None:
        self.val += n


@LEARNER_REGISTRY.register('base')
class BaseLearner:
    """Calls ``policy.forward(batch)`` per ``train``; ``LearnerHook``s run before/after the run and each iteration."""

    config = dict(
        type='base',                        # the registered learner name
        train_iterations=int(1e10),         # DI-engine's key: the run stops here too (with --max-train-iter)
        hook=dict(
            load_ckpt_before_run='',        # a checkpoint's weights to start from ('' = start fresh); 'actor@PATH'
                                            # (ALF's prefix@path): that module's only; a list: several
            log_show_after_iter=100,        # train iterations between log lines (the only host syncs)
            save_ckpt_after_iter=10000,     # train iterations between periodic checkpoints (resume points)
            save_ckpt_after_seconds=60,     # also ckpt_last as a resume point this often (a short run has one too)
            save_ckpt_after_run=True,       # write ckpt_last (a resume point) when the run ends
            save_ckpt_after_eval=False,     # also ckpt_last after each evaluation: a run killed outright (a lost
                                            # node) resumes from no earlier than its last evaluation (bench's runs)
        ),
        on_nonfinite='stop',                # a NaN/inf: 'stop' (raise at the next log or checkpoint) or 'skip' it
        log_histograms=False,               # histograms of the collected actions and rewards at each log
        num_threads=None,                   # torch's threads while training; None: 1 for small MLPs on the CPU,
                                            # else the cores other processes leave free (entry/kit/cpu_threads.py)
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    def __init__(self, cfg: dict | None, policy: SimpleNamespace | None = None, tb_logger: Any = None,
                 dist_info: Any = None, exp_name: str = 'default_experiment', instance_name: str = 'learner') -> None:
        self._cfg = with_defaults(type(self), cfg)
        self._policy, self._tb_logger, self.exp_name = policy, tb_logger, exp_name
        self.logger = build_logger(exp_name, instance_name)
        self.ckpt_dir = os.path.join(exp_name, 'ckpt')
        self.last_iter = CountVar(0)
        self.last_envstep = 0
        self.priority_info: dict[str, Tensor] | None = None
        self._collected: list[tuple[Tensor, Tensor]] = []  # (action, reward) since the last log, for histograms
        self.last_log: dict[str, float] = {}
        self._hooks = build_learner_hooks(self._cfg.hook)
        if self._cfg.on_nonfinite not in ('stop', 'skip'):
            raise ValueError(f"learner.on_nonfinite must be 'stop' or 'skip', got {self._cfg.on_nonfinite!r}")
        self._skip_nonfinite = self._cfg.on_nonfinite == 'skip'
        # the statistics since the last log (a stacked seed's: its row of the seeds'); a step it may drop
        # (on_nonfinite='skip') is summed here, not in its graph
        self.step_sums = StepSums(graph_sums=not self._skip_nonfinite)
        self.skipped_steps = 0
        self.priority_buffer: Any = None  # a prioritized buffer whose priorities each step updates
        self.save_replay_buffer = True
        self.last_resume_point: str | None = None
        self.resumed_from: str | None = None  # the resume point this run continues (a before-run load is skipped)
        self._parts: dict[str, Any] = {}
        self._buffers: dict[str, Any] = {}

    @property
    def policy(self) -> SimpleNamespace:
        return self._policy

    @policy.setter
    def policy(self, policy: SimpleNamespace) -> None:
        self._policy = policy

    @property
    def train_iter(self) -> int:
        return self.last_iter.val

    @train_iter.setter
    def train_iter(self, value: int) -> None:
        self.last_iter.update(value)

    @property
    def hooks(self) -> dict[str, list[LearnerHook]]:
        return self._hooks

    def register_hook(self, hook: LearnerHook) -> None:
        """Add a ``LearnerHook``; it runs at ``hook.position`` in priority order."""
        add_learner_hook(self._hooks, hook)

    def train(self, data: Any, envstep: int = -1) -> dict[str, Tensor]:
        """One learn step on ``data`` (a batch or a list of transitions), between the iteration hooks; first, at a
        reset point of the policy's ``param_resets`` (``envstep``: the run's), its parameter reset, logged."""
        self.call_hook('before_iter')
        self.param_reset(envstep)
        backup = copy.deepcopy(self._policy.state_dict()) if self._skip_nonfinite else None
        output = self._policy.forward(data)
        if backup is not None and not bool(torch.stack([torch.isfinite(v).all() for v in output.values()]).all()):
            self._policy.load_state_dict(backup)
            self.skipped_steps += 1
            self.logger.warning(f"skipped a non-finite step at iteration {self.train_iter} "
                                f"({self.skipped_steps} so far)")
            return output
        self.priority_info = None
        if 'priority' in output and 'replay_buffer_idx' in data:  # sampled from a prioritized buffer
            self.priority_info = {'priority': output['priority'], 'replay_buffer_idx': data['replay_buffer_idx']}
            if self.priority_buffer is not None:  # before the iteration hooks: a checkpoint sees the new priorities
                self.priority_buffer.update(self.priority_info)
        self.step_sums.add(output)
        self.last_iter.add(1)
        self.last_envstep = envstep
        self.call_hook('after_iter')
        return output

    def observe_collected(self, action: Tensor, reward: Tensor) -> None:
        """Collected actions and rewards for the next log's histograms (``log_histograms``; else ignored)."""
        if self._cfg.log_histograms:
            self._collected.append((action, reward))

    def log(self) -> dict[str, float]:
        """Average the accumulated statistics (one host sync), write them to tensorboard and the text log (and
        the histograms of what was collected since the last log, with ``log_histograms``)."""
        if self._collected and self._tb_logger is not None:
            actions, rewards = zip(*self._collected)
            self._tb_logger.add_histogram('collector/action', torch.cat(actions).float().cpu(), self.last_envstep)
            self._tb_logger.add_histogram('collector/reward', torch.cat(rewards).float().cpu(), self.last_envstep)
        self._collected = []
        if not self.step_sums.count:
            return self.last_log
        sums, count = self.step_sums.take()
        values = torch.stack([v.float() for v in sums.values()]).div(count).tolist()
        self._raise_if_nonfinite(dict(zip(sums, values)))
        self.last_log = dict(zip(sums, values))
        extras = getattr(self._policy, 'log_extras', None)
        if extras is not None:
            self.last_log |= extras(self.last_log)
        if self.skipped_steps:
            self.last_log['skipped_steps'] = float(self.skipped_steps)
        write_scalars(self._tb_logger, 'learner', self.last_log, self.train_iter)
        self.logger.info(format_scalars(f"iter {self.train_iter} envstep {self.last_envstep}", self.last_log))
        return self.last_log

    def param_reset(self, envstep: int) -> None:
        """The policy's parameter reset where one of its ``param_resets`` is due at ``envstep`` (the run's), logged
        (``train`` calls it first; a run of many seeds before its stacked update)."""
        reset = getattr(self._policy, 'param_reset', None)
        said = reset(envstep) if reset is not None and envstep >= 0 else None
        if said:
            build_logger(self.exp_name, 'summary', console=True).info(f"iter {self.train_iter}: {said}")
            self.logger.info(f"iter {self.train_iter} envstep {envstep} {said}")
            write_scalars(self._tb_logger, 'learner', {'param_reset_envstep': float(envstep)}, self.train_iter)

    def call_hook(self, name: str) -> None:
        """Run the hooks at position ``name`` ('before_run', 'after_run', 'before_iter' or 'after_iter')."""
        if name not in self._hooks:
            raise ValueError(f"unknown learner hook position {name!r}; expected one of {LearnerHook.positions}")
        for hook in self._hooks[name]:
            hook(self)

    def evaluated(self) -> None:
        """After an evaluation (the pipelines call it): a resume point, where ``hook.save_ckpt_after_eval`` asks."""
        if self._cfg.hook.save_ckpt_after_eval:
            self.save_checkpoint('ckpt_last.pth.tar', resume_point=True)

    def info(self, message: str) -> None:
        self.logger.info(message)

    # ---- checkpoints ----
    def attach(self, name: str, part: Any, buffer: bool = False) -> None:
        """Save ``part`` (``state_dict``/``load_state_dict``) in every resume checkpoint under ``name``; a buffer
        goes in its own file beside the checkpoint when ``save_replay_buffer`` is on."""
        (self._buffers if buffer else self._parts)[name] = part

    def checkpoint_state(self) -> dict[str, Any]:
        """The learn state and counters a checkpoint holds, as of now (live tensors: copy to keep them)."""
        return {'kind': CHECKPOINT_KIND, 'version': CHECKPOINT_VERSION, 'last_iter': self.train_iter,
                'last_envstep': self.last_envstep, **self._policy.state_dict()}

    def save_checkpoint(self, name: str = 'ckpt_best.pth.tar', resume_point: bool = False,
                        state: dict[str, Any] | None = None) -> str:
        """Write the learn state (or an earlier ``checkpoint_state()``) to ``<exp_name>/ckpt/<name>`` atomically;
        return the path.

        A ``resume_point`` also holds the attached parts (collector, evaluator, ...), the RNG states and the
        buffers' file, and becomes ``ckpt/latest`` once everything is on disk. Non-finite parameters or
        statistics are never written: that raises ``NonFiniteError`` instead.
        """
        path = os.path.join(self.ckpt_dir, name)
        state = dict(state) if state is not None else self.checkpoint_state()
        self.check_finite(state)
        if resume_point:
            state['run'] = {key: part.state_dict() for key, part in self._parts.items()}
            state['rng'] = get_rng_state()
            state['skipped_steps'] = self.skipped_steps
            if self._buffers and self.save_replay_buffer:
                state['buffer_file'] = name.removesuffix('.pth.tar') + '.buffer.pth.tar'
                save_file(os.path.join(self.ckpt_dir, state['buffer_file']),
                          {key: buffer.state_dict() for key, buffer in self._buffers.items()})
        save_file(path, to_safe(state))
        if resume_point:
            atomic_write_text(os.path.join(self.ckpt_dir, LATEST), name + '\n')
            self.last_resume_point = path
            self._prune_buffer_files(keep=state.get('buffer_file'))
        return path

    def _prune_buffer_files(self, keep: str | None) -> None:
        """Buffers are large: only the newest resume point keeps its buffer file."""
        for file in os.listdir(self.ckpt_dir):
            if file.endswith('.buffer.pth.tar') and file != keep:
                os.remove(os.path.join(self.ckpt_dir, file))

    def load_checkpoint(self, path: str) -> dict[str, Any]:
        """Restore the learn state and iteration count from a checkpoint written by ``save_checkpoint``."""
        state = load_checkpoint(path)
        try:
            self._policy.load_state_dict(state)
        except (KeyError, RuntimeError, ValueError) as error:
            raise ValueError(f"checkpoint {path} does not fit this policy's learn state: {error}") from None
        self.train_iter = int(state.get('last_iter', 0))
        self.last_envstep = int(state.get('last_envstep', 0))
        self.logger.info(f"loaded {path} at iteration {self.train_iter}")
        return state

    def load_modules(self, path: str, prefixes: list[str]) -> None:
        """ALF's ``prefix@path``: only the named top-level modules of the model (``'actor'``, ``'critic'``, ...) from
        ``path``'s checkpoint, into the model and its target copy; the rest of the learn state stays as it is."""
        source, state = load_checkpoint(path), self._policy.state_dict()
        names = sorted({key.split('.')[0] for key in state['model']})
        unknown = [prefix for prefix in prefixes if prefix not in names]
        if unknown:
            raise ValueError(f"load_ckpt_before_run: this policy's model has no module {', '.join(map(repr, unknown))}"
                             f"; its modules: {', '.join(names)}")
        for key in ('model', 'target_model'):
            if key not in state:
                continue
            weights = source.get(key) or source['model']  # a target copy, where the checkpoint has one
            for prefix in prefixes:
                picked = {k: v for k, v in weights.items() if k.split('.')[0] == prefix}
                if not picked:
                    raise ValueError(f"{path} holds no weights of module {prefix!r}")
                state[key].update(picked)
        try:
            self._policy.load_state_dict(state)
        except (KeyError, RuntimeError, ValueError) as error:
            raise ValueError(f"the {'/'.join(prefixes)} weights of {path} do not fit this policy's model: "
                             f"{error}") from None
        self.logger.info(f"loaded {', '.join(prefixes)} from {path}; the rest as initialised")

    def resume(self, path: str) -> None:
        """Continue from a resume checkpoint: learn state, attached parts, buffers, then RNG states."""
        state = self.load_checkpoint(path)
        if 'run' not in state:
            raise ValueError(f"{path} holds weights only, not a run to resume (resume from ckpt/latest or an "
                             f"iteration_<N> checkpoint written by this version)")
        for key, part in self._parts.items():
            if key in state['run']:
                part.load_state_dict(state['run'][key])
        self._load_buffers(path, state)
        self.skipped_steps = state.get('skipped_steps', 0)
        self.last_resume_point = self.resumed_from = path
        set_rng_state(state['rng'])
        message = f"resumed the run from {path}: iteration {self.train_iter}, env step {self.last_envstep}"
        self.logger.info(message)
        if self.exp_name is not None:
            build_logger(self.exp_name, 'summary', console=True).info(message)

    def _load_buffers(self, path: str, state: dict[str, Any]) -> None:
        file = state.get('buffer_file')
        if not self._buffers:
            return
        if file is None or not os.path.isfile(os.path.join(os.path.dirname(path), file)):
            self.logger.warning(f"{path} has no saved replay buffer (save_replay_buffer off, or a newer resume point "
                                f"replaced it): the buffers start empty")
            return
        buffer_path = os.path.join(os.path.dirname(path), file)
        saved = load_file(buffer_path, 'replay buffer file')
        for key, buffer in self._buffers.items():
            if key in saved:
                buffer.load_state_dict(saved[key], f"{buffer_path}[{key!r}]")

    def check_finite(self, state: dict[str, Any] | None = None) -> None:
        """Raise ``NonFiniteError`` if an unlogged statistic, or a weight of ``state``'s models, is NaN or
        infinite (one host sync)."""
        self._raise_if_nonfinite({k: float(v.float().sum()) for k, v in self.step_sums.sums.items()})
        weights = [v for key in ('model', 'target_model') for v in (state or {}).get(key, {}).values()
                   if isinstance(v, Tensor) and v.is_floating_point()]
        if weights and not bool(torch.stack([torch.isfinite(w).all() for w in weights]).all()):
            self._raise_if_nonfinite({'model parameters': float('nan')})

    def _raise_if_nonfinite(self, values: dict[str, float]) -> None:
        bad = [key for key, value in values.items() if not math.isfinite(value)]
        if bad:
            where = self.last_resume_point or 'none yet'
            raise NonFiniteError(f"non-finite {', '.join(bad)} by train iteration {self.train_iter}: training "
                                 f"stopped and nothing written. Last good checkpoint: {where}")


def create_learner(cfg: dict, **kwargs: Any) -> BaseLearner:
    """Build the registered learner ``cfg.type`` (default ``'base'``) after importing ``cfg.import_names``."""
    import_names(cfg.get('import_names'))
    return LEARNER_REGISTRY.build(cfg.get('type') or 'base', cfg=cfg, **kwargs)


def load_checkpoint(path: str) -> dict[str, Any]:
    """Read a ding_lite checkpoint with clear errors for missing, unreadable or foreign files."""
    state = load_file(path, 'checkpoint')
    if not isinstance(state, dict) or 'model' not in state:
        raise ValueError(f"{path} is not a ding_lite checkpoint (expected a dict with a 'model' entry)")
    return state
