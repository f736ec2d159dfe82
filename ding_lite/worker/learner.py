"""The learner: runs the policy's learn step, logs from tensors every N iterations, saves checkpoints."""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import torch
from easydict import EasyDict
from torch import Tensor

from ..registry import LEARNER_REGISTRY, import_names
from ..utils.checkpoint import load_file, save_file
from ..utils.default_config import class_default_config, with_defaults
from .learner_hook import LearnerHook, add_learner_hook, build_learner_hooks
from .logger import build_logger, format_scalars, write_scalars

CHECKPOINT_KIND = 'ding_lite.checkpoint'


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
        type='base',
        train_iterations=int(1e10),
        hook=dict(
            load_ckpt_before_run='',       # checkpoint path to resume from ('' = start fresh)
            log_show_after_iter=100,        # train iterations between log lines (the only host syncs)
            save_ckpt_after_iter=10000,     # train iterations between periodic checkpoints
            save_ckpt_after_run=True,
        ),
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
        self._sums: dict[str, Tensor] = {}
        self._count = 0
        self.last_log: dict[str, float] = {}
        self._hooks = build_learner_hooks(self._cfg.hook)

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
        """One learn step on ``data`` (a batch or a list of transitions), between the iteration hooks."""
        self.call_hook('before_iter')
        output = self._policy.forward(data)
        self.priority_info = None
        if 'priority' in output and 'replay_buffer_idx' in data:  # sampled from a prioritized buffer
            self.priority_info = {'priority': output['priority'], 'replay_buffer_idx': data['replay_buffer_idx']}
        for key, value in output.items():
            if key != 'priority':
                self._sums[key] = self._sums[key] + value if key in self._sums else value.clone()
        self._count += 1
        self.last_iter.add(1)
        self.last_envstep = envstep
        self.call_hook('after_iter')
        return output

    def log(self) -> dict[str, float]:
        """Average the accumulated statistics (one host sync), write them to tensorboard and the text log."""
        if not self._count:
            return self.last_log
        values = torch.stack([v.float() for v in self._sums.values()]).div(self._count).tolist()
        self.last_log = dict(zip(self._sums, values))
        self._sums, self._count = {}, 0
        write_scalars(self._tb_logger, 'learner', self.last_log, self.train_iter)
        self.logger.info(format_scalars(f"iter {self.train_iter} envstep {self.last_envstep}", self.last_log))
        return self.last_log

    def call_hook(self, name: str) -> None:
        """Run the hooks at position ``name`` ('before_run', 'after_run', 'before_iter' or 'after_iter')."""
        if name not in self._hooks:
            raise ValueError(f"unknown learner hook position {name!r}; expected one of {LearnerHook.positions}")
        for hook in self._hooks[name]:
            hook(self)

    def info(self, message: str) -> None:
        self.logger.info(message)
    def save_checkpoint(self, name: str = 'ckpt_best.pth.tar') -> str:
        """Write the learn state to ``<exp_name>/ckpt/<name>`` atomically; return the path."""
        path = os.path.join(self.ckpt_dir, name)
        save_file(path, {'kind': CHECKPOINT_KIND, 'last_iter': self.train_iter, 'last_envstep': self.last_envstep,
                         **self._policy.state_dict()})
        return path

    def load_checkpoint(self, path: str) -> None:
        """Restore the learn state and iteration count from a checkpoint written by ``save_checkpoint``."""
        state = load_checkpoint(path)
        try:
            self._policy.load_state_dict(state)
        except (KeyError, RuntimeError) as error:
            raise ValueError(f"checkpoint {path} does not fit this policy's learn state: {error}") from error
        self.train_iter = int(state.get('last_iter', 0))
        self.last_envstep = int(state.get('last_envstep', 0))
        self.logger.info(f"resumed from {path} at iteration {self.train_iter}")


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
