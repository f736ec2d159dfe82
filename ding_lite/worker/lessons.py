"""ML-Agents' lessons at the workers' seams: a ``RoundHook`` that counts episodes for the curriculum, moves its
lessons after each collection round, logs each move and every parameter's lesson, and holds a run's stop until the
last lessons."""
from __future__ import annotations

from typing import Any

from .logger import write_scalars
from .manager_protocol import Record, RoundHook


class LessonHook(RoundHook):
    """The lessons of an env manager's ``env.environment_parameters`` (``parameters``: its ``EpisodeParameters``)."""

    def __init__(self, parameters: Any) -> None:
        self.curriculum = parameters.curriculum

    def collected(self, record: Record) -> None:
        self.curriculum.episode_returns([record['return']])  # a reward-measured lesson counts training episodes

    def evaluated(self, returns: list[float]) -> None:
        self.curriculum.episode_returns(returns, 'evaluator')  # completion_criteria.source='evaluator'

    def round_done(self, envstep: int, logger: Any, tb_logger: Any) -> None:
        """Move the lessons whose completion criteria are met (each env gets the new value at its next episode)."""
        if not self.curriculum.has_lessons:
            return
        moves = self.curriculum.advance(envstep)
        for name, lesson, index in moves:
            value = f"a {lesson.value.kind} sampler" if hasattr(lesson.value, 'kind') else lesson.value
            logger.info(f"curriculum: {name} moves to lesson {index} {lesson.name!r} ({value}) at env step {envstep}")
        if moves:
            self.log(envstep, tb_logger)

    def log(self, envstep: int, tb_logger: Any) -> None:
        """Every parameter's lesson as ``curriculum/<name>/lesson``."""
        if self.curriculum.has_lessons:
            write_scalars(tb_logger, 'curriculum', {f'{name}/lesson': index for name, index in
                                                    self.curriculum.lesson.items()}, envstep)

    @property
    def stop_allowed(self) -> bool:
        return self.curriculum.finished


def lesson_hooks(parameters: Any) -> tuple[RoundHook, ...]:
    """The round hooks of an env manager's ``parameters`` (none without ``env.environment_parameters``)."""
    return () if parameters is None else (LessonHook(parameters),)
