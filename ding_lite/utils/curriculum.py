"""ML-Agents' environment parameters (``env.environment_parameters``): per parameter a constant, a sampler drawn for
each episode (domain randomisation), or a curriculum of lessons that advance on the run's progress or its returns.

A parameter reaches the env at each episode's start, the way gymnasium envs take settings: a keyword of
``gymnasium.make`` (the env made again where its value changed) or ``reset(options=...)``
(``env.environment_parameters_via``). A lesson change reaches each env at its next episode, so no transition spans
one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .default_config import ConfigError

VIA = ('make', 'reset')
MEASURES = ('progress', 'reward')
CRITERIA = dict(measure='reward', behavior=None, threshold=None, min_lesson_length=0, signal_smoothing=True,
                require_reset=False, source='collector')
SAMPLER_KEYS = {'uniform': ('min_value', 'max_value'), 'gaussian': ('mean', 'st_dev'),
                'multirangeuniform': ('intervals',)}


@dataclass(frozen=True)
class Sampler:
    """ML-Agents' samplers: ``uniform`` (min_value, max_value), ``gaussian`` (mean, st_dev), ``multirangeuniform``
    (intervals: an interval drawn by its length, then a value in it); ``seed`` optional."""

    kind: str
    parameters: dict[str, Any]

    def draw(self, rng: np.random.Generator) -> float:
        p = self.parameters
        if self.kind == 'uniform':
            return float(rng.uniform(p['min_value'], p['max_value']))
        if self.kind == 'gaussian':
            return float(rng.normal(p['mean'], p['st_dev']))
        intervals = np.asarray(p['intervals'], np.float64)
        lengths = intervals[:, 1] - intervals[:, 0]
        low, high = intervals[rng.choice(len(intervals), p=lengths / lengths.sum())]
        return float(rng.uniform(low, high))


@dataclass(frozen=True)
class Lesson:
    name: str
    value: Any                    # a constant or a Sampler
    criteria: dict | None         # None: the last lesson


def parse_environment_parameters(spec: Any) -> dict[str, list[Lesson]]:
    """``env.environment_parameters`` as each parameter's lessons (one lesson for a constant or a sampler), or
    ``ConfigError`` naming what is wrong."""
    if not spec:
        return {}
    if not isinstance(spec, dict):
        raise ConfigError(f"env.environment_parameters must be a dict {{parameter: value, sampler or curriculum}}, "
                          f"got {spec!r}")
    return {str(name): _lessons(f"env.environment_parameters.{name}", value) for name, value in spec.items()}


def _lessons(where: str, value: Any) -> list[Lesson]:
    if not (isinstance(value, dict) and 'curriculum' in value):
        return [Lesson('', _value(where, value), None)]
    lessons = value['curriculum']
    if not isinstance(lessons, (list, tuple)) or not lessons:
        raise ConfigError(f"{where}.curriculum must be a list of lessons {{name, value, completion_criteria}}, "
                          f"got {lessons!r}")
    parsed = []
    for k, lesson in enumerate(lessons):
        at = f"{where}.curriculum[{k}]"
        if not isinstance(lesson, dict) or 'value' not in lesson:
            raise ConfigError(f"{at} must be a dict with a 'value' (and 'name', 'completion_criteria'), got {lesson!r}")
        unknown = set(lesson) - {'name', 'value', 'completion_criteria'}
        if unknown:
            raise ConfigError(f"{at}: unknown keys {sorted(unknown)}; a lesson has name, value, completion_criteria")
        last = k == len(lessons) - 1
        criteria = None if last else _criteria(f"{at}.completion_criteria", lesson.get('completion_criteria'))
        parsed.append(Lesson(str(lesson.get('name', f'lesson{k}')), _value(f"{at}.value", lesson['value']), criteria))
    return parsed


def _value(where: str, value: Any) -> Any:
    """A constant (number, bool, str, list) as it is, or a ``Sampler`` from ``{sampler_type, sampler_parameters}``."""
    if not isinstance(value, dict):
        return value
    kind = value.get('sampler_type')
    if kind not in SAMPLER_KEYS or set(value) - {'sampler_type', 'sampler_parameters'}:
        raise ConfigError(f"{where} must be a constant or {{sampler_type: one of {list(SAMPLER_KEYS)}, "
                          f"sampler_parameters: {{...}}}}, got {value!r}")
    params = dict(value.get('sampler_parameters') or {})
    missing = [key for key in SAMPLER_KEYS[kind] if key not in params]
    unknown = set(params) - {*SAMPLER_KEYS[kind], 'seed'}
    if missing or unknown:
        raise ConfigError(f"{where}: sampler {kind!r} takes sampler_parameters {list(SAMPLER_KEYS[kind])} (and "
                          f"'seed'); missing {missing}, unknown {sorted(unknown)}")
    if kind == 'multirangeuniform':
        intervals = params['intervals']
        if not intervals or not all(isinstance(i, (list, tuple)) and len(i) == 2 and i[0] < i[1] for i in intervals):
            raise ConfigError(f"{where}: intervals must be a list of [low, high] with low < high, got {intervals!r}")
    elif kind == 'uniform' and not params['min_value'] <= params['max_value']:
        raise ConfigError(f"{where}: min_value must not exceed max_value, got {params}")
    return Sampler(kind, params)


def _criteria(where: str, criteria: Any) -> dict:
    if not isinstance(criteria, dict):
        raise ConfigError(f"{where} is needed by every lesson but the last: a dict with 'threshold' (and measure, "
                          f"min_lesson_length, signal_smoothing, require_reset), got {criteria!r}")
    unknown = set(criteria) - set(CRITERIA)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}; expected some of {sorted(CRITERIA)}")
    criteria = {**CRITERIA, **criteria}
    if criteria['measure'] not in MEASURES:
        raise ConfigError(f"{where}.measure must be one of {list(MEASURES)}, got {criteria['measure']!r}")
    if not isinstance(criteria['threshold'], (int, float)) or isinstance(criteria['threshold'], bool):
        raise ConfigError(f"{where}.threshold must be a number, got {criteria['threshold']!r}")
    if criteria['source'] not in ('collector', 'evaluator'):
        raise ConfigError(f"{where}.source must be 'collector' (training episodes, ML-Agents') or 'evaluator', got "
                          f"{criteria['source']!r}")
    if criteria['require_reset']:
        raise ConfigError(f"{where}.require_reset=True: lessons reach each env at its next episode (no episode is "
                          f"cut short); leave require_reset False")
    return criteria


class Curriculum:
    """Where each parameter's lessons stand, and the measures that move them on (ML-Agents' completion criteria:
    ``progress``, the fraction of the run's ``max_env_step`` done, or ``reward``, the mean return of the last
    ``min_lesson_length`` episodes of the lesson, smoothed as 0.25 old + 0.75 new)."""

    def __init__(self, spec: Any) -> None:
        self.lessons = parse_environment_parameters(spec)
        self.lesson = {name: 0 for name in self.lessons}
        self.budget: float = math.inf   # the run's max_env_step (measure='progress')
        self._returns = {'collector': {name: [] for name in self.lessons},
                         'evaluator': {name: [] for name in self.lessons}}
        self._smoothed = {name: 0.0 for name in self.lessons}

    def last_lessons(self) -> None:
        """Every parameter in its last lesson: the task a run was trained towards (``-m eval``, ``collect_demo``)."""
        self.lesson = {name: len(lessons) - 1 for name, lessons in self.lessons.items()}

    @property
    def finished(self) -> bool:
        """Whether every parameter is in its last lesson (a run's stop value counts from then on)."""
        return all(self.lesson[name] == len(lessons) - 1 for name, lessons in self.lessons.items())

    @property
    def has_lessons(self) -> bool:
        return any(len(lessons) > 1 for lessons in self.lessons.values())

    def needs_budget(self) -> list[str]:
        return [name for name, lessons in self.lessons.items()
                if any(lesson.criteria and lesson.criteria['measure'] == 'progress' for lesson in lessons)]

    def episode_returns(self, returns: list[float], source: str = 'collector') -> None:
        """Returns of finished episodes (the collector's training episodes, or an evaluation's)."""
        for name in self.lessons:
            self._returns[source][name].extend(float(r) for r in returns)

    def advance(self, envstep: int) -> list[tuple[str, Lesson, int]]:
        """Move every parameter whose lesson's criteria are met to its next lesson; ``(name, lesson, index)`` of
        each move."""
        moves = []
        for name, lessons in self.lessons.items():
            criteria = lessons[self.lesson[name]].criteria
            if criteria is not None and self._met(name, criteria, envstep):
                self.lesson[name] += 1
                for returns in self._returns.values():
                    returns[name] = []
                moves.append((name, lessons[self.lesson[name]], self.lesson[name]))
        return moves

    def _met(self, name: str, criteria: dict, envstep: int) -> bool:
        returns = self._returns[criteria['source']][name]
        if len(returns) < criteria['min_lesson_length']:
            return False
        if criteria['measure'] == 'progress':
            return envstep / self.budget > criteria['threshold']
        if not returns:
            return False
        measure = float(np.mean(returns[-max(criteria['min_lesson_length'], 1):]))
        if criteria['signal_smoothing']:
            measure = 0.25 * self._smoothed[name] + 0.75 * measure
            self._smoothed[name] = measure
        return measure > criteria['threshold']

    def state_dict(self) -> dict[str, Any]:
        return {'lesson': dict(self.lesson), 'returns': {s: {n: list(r) for n, r in by.items()}
                                                         for s, by in self._returns.items()},
                'smoothed': dict(self._smoothed)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.lesson = {name: int(state['lesson'].get(name, 0)) for name in self.lessons}
        for source, by in state['returns'].items():
            self._returns[source] = {name: list(by.get(name, [])) for name in self.lessons}
        self._smoothed = {name: float(state['smoothed'].get(name, 0.0)) for name in self.lessons}


class EpisodeParameters:
    """What each new episode of one env manager's envs is given: the curriculum's current values, a sampler drawn
    anew per episode (from this manager's generator, or the sampler's own ``seed``)."""

    def __init__(self, curriculum: Curriculum, seed: int, via: str = 'make') -> None:
        if via not in VIA:
            raise ConfigError(f"env.environment_parameters_via must be one of {list(VIA)}, got {via!r}")
        self.curriculum, self.via, self._seed = curriculum, via, seed
        self.restart()

    def restart(self) -> None:
        """Draw from the start of the streams again (an evaluation's envs: the same values each evaluation)."""
        self._rng = np.random.default_rng(self._seed)
        self._own: dict[str, np.random.Generator] = {}  # '<name>/<lesson>': a sampler's own seed's stream

    def draw(self) -> dict[str, Any]:
        """The values of one episode."""
        values = {}
        for name, lessons in self.curriculum.lessons.items():
            index = self.curriculum.lesson[name]
            value = lessons[index].value
            if isinstance(value, Sampler):
                seed = value.parameters.get('seed')
                rng = self._rng if seed is None else \
                    self._own.setdefault(f'{name}/{index}', np.random.default_rng(seed))
                value = value.draw(rng)
            values[name] = value
        return values

    def state_dict(self) -> dict[str, Any]:
        return {'curriculum': self.curriculum.state_dict(), 'rng': self._rng.bit_generator.state,
                'own': {key: rng.bit_generator.state for key, rng in self._own.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.curriculum.load_state_dict(state['curriculum'])
        self._rng.bit_generator.state = state['rng']
        for key, rng_state in state['own'].items():
            self._own.setdefault(key, np.random.default_rng()).bit_generator.state = rng_state


__all__ = ['Curriculum', 'EpisodeParameters', 'Lesson', 'Sampler', 'parse_environment_parameters']
