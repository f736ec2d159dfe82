"""Learner hooks in DI-engine's form: callables run by the learner at four positions, ordered by priority."""
from __future__ import annotations

import os
import time
from typing import Any, Callable

from .logger import build_logger


class LearnerHook:
    """Called as ``hook(learner)`` at ``position``; among hooks at one position, lower ``priority`` runs first.

    Subclasses implement ``__call__(self, engine)`` (DI-engine's signature; ``engine`` is the learner).
    """

    positions = ['before_run', 'after_run', 'before_iter', 'after_iter']

    def __init__(self, name: str, priority: float = 100, *, position: str) -> None:
        if position not in self.positions:
            raise ValueError(f"learner hook {name!r} has position {position!r}; expected one of {self.positions}")
        if priority < 0:
            raise ValueError(f"learner hook {name!r} has priority {priority}; expected a number >= 0")
        self._name, self._priority, self._position = name, priority, position

    @property
    def name(self) -> str:
        return self._name

    @property
    def priority(self) -> float:
        return self._priority

    @property
    def position(self) -> str:
        return self._position

    def __call__(self, engine: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(self, engine)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r}, priority={self._priority}, position={self._position!r})"


def add_learner_hook(hooks: dict[str, list[LearnerHook]], hook: LearnerHook) -> None:
    """Insert ``hook`` at its position after every hook of lower or equal priority (stable, as DI-engine)."""
    if not isinstance(hook, LearnerHook):
        raise TypeError(f"expected a LearnerHook, got {type(hook).__name__}")
    queue = hooks.setdefault(hook.position, [])
    index = next((i for i in range(len(queue) - 1, -1, -1) if hook.priority >= queue[i].priority), -1) + 1
    queue.insert(index, hook)


class CallbackHook(LearnerHook):
    """Runs ``fn(engine)`` every ``freq`` train iterations (``freq`` 1: every call)."""

    def __init__(self, name: str, priority: float, position: str, fn: Callable[[Any], None], freq: int = 1) -> None:
        super().__init__(name, priority, position=position)
        self._fn, self._freq = fn, freq

    def __call__(self, engine: Any) -> None:
        if engine.train_iter % self._freq == 0:
            self._fn(engine)


class TimedResumePoint(LearnerHook):
    """Writes ``ckpt_last.pth.tar`` as a resume point every ``seconds`` of training, and never more often than
    every 20 writes' durations (at most 5% of the time goes to it, whatever the buffer's size)."""

    def __init__(self, seconds: float) -> None:
        super().__init__('save_ckpt_after_seconds', 20, position='after_iter')
        self._seconds, self._due = seconds, time.monotonic() + seconds

    def __call__(self, engine: Any) -> None:
        now = time.monotonic()
        if now < self._due:
            return
        engine.save_checkpoint('ckpt_last.pth.tar', resume_point=True)
        self._due = now + max(self._seconds, 20 * (time.monotonic() - now))


def checkpoint_loads(value: str | list[str]) -> list[tuple[list[str] | None, str]]:
    """``load_ckpt_before_run`` as ``(modules or None for all, path)`` in order: a path, ``'actor@PATH'`` (ALF's
    ``prefix@path``), or a list of them; one path's prefixes load together. A ``ValueError`` names a missing file."""
    items = [value] if isinstance(value, str) else list(value)
    loads: dict[str, list[str] | None] = {}
    for item in items:
        prefix, _, path = item.partition('@') if isinstance(item, str) else ('', '', item)
        if not prefix.isidentifier() or not path:  # a path with an '@' of its own
            prefix, path = '', item
        if not isinstance(path, str) or not os.path.isfile(path):
            raise ValueError(f"learn.learner.hook.load_ckpt_before_run={value!r}: no checkpoint file {path!r}; give "
                             f"a path, 'actor@PATH' (that module's weights only) or a list of them")
        if path in loads and (loads[path] is None or not prefix):
            raise ValueError(f"learn.learner.hook.load_ckpt_before_run names {path} twice, once whole")
        loads[path] = loads.get(path, []) + [prefix] if prefix else None
    return list((modules, path) for path, modules in loads.items())


def _load_before_run(engine: Any, loads: list[tuple[list[str] | None, str]]) -> None:
    """The loads, at a run's start; a resumed run continues its own state (the loads applied when it began)."""
    if getattr(engine, 'resumed_from', None) is not None:
        named = ', '.join(path if modules is None else f"{'+'.join(modules)}@{path}" for modules, path in loads)
        message = (f"load_ckpt_before_run ({named}) applied when the run began; resumed from "
                   f"{engine.resumed_from}, the run continues its own weights")
        engine.info(message)
        if getattr(engine, 'exp_name', None) is not None:
            build_logger(engine.exp_name, 'summary', console=True).info(message)
        return
    for modules, path in loads:
        engine.load_checkpoint(path) if modules is None else engine.load_modules(path, modules)


def build_learner_hooks(hook_cfg: dict) -> dict[str, list[LearnerHook]]:
    """The built-in hooks a learner's ``hook`` config asks for (DI-engine's simplified hook keys)."""
    hooks: dict[str, list[LearnerHook]] = {position: [] for position in LearnerHook.positions}
    if hook_cfg.get('load_ckpt_before_run'):
        loads = checkpoint_loads(hook_cfg['load_ckpt_before_run'])
        add_learner_hook(hooks, CallbackHook('load_ckpt_before_run', 20, 'before_run',
                                             lambda engine: _load_before_run(engine, loads)))
    if hook_cfg.get('log_show_after_iter'):
        add_learner_hook(hooks, CallbackHook('log_show_after_iter', 20, 'after_iter', lambda engine: engine.log(),
                                             freq=hook_cfg['log_show_after_iter']))
    if hook_cfg.get('save_ckpt_after_iter'):
        add_learner_hook(hooks, CallbackHook(
            'save_ckpt_after_iter', 20, 'after_iter',
            lambda engine: engine.save_checkpoint(f'iteration_{engine.train_iter}.pth.tar', resume_point=True),
            freq=hook_cfg['save_ckpt_after_iter']))
    if hook_cfg.get('save_ckpt_after_seconds'):
        add_learner_hook(hooks, TimedResumePoint(hook_cfg['save_ckpt_after_seconds']))
    add_learner_hook(hooks, CallbackHook('log_show_after_run', 10, 'after_run', lambda engine: engine.log()))
    if hook_cfg.get('save_ckpt_after_run'):
        add_learner_hook(hooks, CallbackHook('save_ckpt_after_run', 20, 'after_run',
                                             lambda engine: engine.save_checkpoint('ckpt_last.pth.tar',
                                                                                   resume_point=True)))
    return hooks


__all__ = ['LearnerHook', 'add_learner_hook', 'CallbackHook', 'build_learner_hooks']
