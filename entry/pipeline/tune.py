"""``ding_lite tune``: Optuna's search over a config's hyperparameters (rl-zoo's ``--optimize``), its trials as rows
of stacked runs.

Trials whose search space keeps the networks' shapes (``ROW_SETTINGS``) run ``stack`` at a time as the rows of one
run (``train_rows``), each with its own hyperparameters inside the stacked update; others one after another. Each
trial is a run of its own folder, ``<name>_tune/trial_<n>``, scored by the mean of its evaluation returns over its
env-step budget (the area under its learning curve: a fast learner scores higher; after it reaches its stop value its
last return holds). A median pruner stops a row whose evaluation falls below the earlier trials' median at the same
env step: its run ends there and it leaves the stack. With ``storage`` (``sqlite:///search.db``) a search stopped by
Ctrl-C resumes where it was: its unfinished trials run again.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import json
import math
import os
import re
import time
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_lite.config import ConfigError, apply_overrides, read_config, save_config
from ding_lite.utils.checkpoint import atomic_write_text
from policy_zoo import get_policy_cls
from ..kit import life_cycle
from ..kit.ray_join import import_ray, join_ray
from ..kit.capabilities import PIPELINES
from ..kit.config_input import compile_input
from .seed_axis import ROW_SETTINGS, scheduled_rates, why_not_vectorised
from .seeds import train_rows
from .serial import serial_setup

LEARNING_RATES = ('policy.learn.learning_rate_q', 'policy.learn.learning_rate_policy',
                  'policy.learn.learning_rate_alpha')
# after rl-zoo's SAC sampler: one learning rate for the critics, the actor and the temperature (its range capped at
# 1e-2), its gammas and Polyak rates; every key a row setting, so the trials stack
DEFAULT_SPACE = {
    'learning_rate': ['loguniform', 1e-5, 1e-2],
    'policy.learn.discount_factor': ['categorical', [0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999]],
    'policy.learn.target_theta': ['categorical', [0.001, 0.005, 0.01, 0.02, 0.05, 0.08]],
}
KINDS = {'loguniform': 2, 'uniform': 2, 'int': 2, 'categorical': 1}  # the arguments each takes


def check_space(space: Any) -> dict[str, list]:
    """``space`` (``{config key: [kind, ...]}``) checked: kinds 'loguniform' / 'uniform' / 'int' with low and high,
    or 'categorical' with a list of choices; 'learning_rate' sets the three learning rates alike."""
    if not isinstance(space, dict) or not space:
        raise ConfigError(f"a search space must be a non-empty dict {{config key: [kind, ...]}}, got {space!r}")
    for key, spec in space.items():
        kind = spec[0] if isinstance(spec, (list, tuple)) and spec else None
        if kind not in KINDS or len(spec) != KINDS[kind] + 1:
            raise ConfigError(f"search space {key!r}: {spec!r}; expected ['loguniform', low, high], ['uniform', low, "
                              f"high], ['int', low, high] or ['categorical', [choice, ...]]")
        if kind == 'categorical' and not (isinstance(spec[1], (list, tuple)) and spec[1]):
            raise ConfigError(f"search space {key!r}: 'categorical' takes a non-empty list of choices, got {spec[1]!r}")
        if kind != 'categorical' and not spec[1] < spec[2]:
            raise ConfigError(f"search space {key!r}: low {spec[1]!r} must be below high {spec[2]!r}")
        if kind == 'loguniform' and spec[1] <= 0:
            raise ConfigError(f"search space {key!r}: 'loguniform' needs a positive low, got {spec[1]!r}")
    return {key: list(spec) for key, spec in space.items()}


def load_space(path: str) -> dict[str, list]:
    """The search space of a ``.json`` file or a ``.py`` file that defines ``space``."""
    if not os.path.isfile(path):
        raise ConfigError(f"--space {path}: no such file; give a .json file or a .py file defining space = {{...}}")
    if path.endswith('.json'):
        with open(path) as f:
            return check_space(json.load(f))
    scope: dict[str, Any] = {}
    with open(path) as f:
        exec(compile(f.read(), path, 'exec'), scope)
    if 'space' not in scope:
        raise ConfigError(f"--space {path} defines no `space` (a dict {{config key: [kind, ...]}})")
    return check_space(scope['space'])


def sample(trial: Any, space: dict[str, list]) -> dict[str, Any]:
    """The trial's values of ``space`` as config overrides (``{dotted key: value}``)."""
    overrides = {}
    for name, (kind, *args) in space.items():
        if kind == 'categorical':
            value = trial.suggest_categorical(name, args[0])
        elif kind == 'int':
            value = trial.suggest_int(name, *args)
        else:
            value = trial.suggest_float(name, *args, log=kind == 'loguniform')
        overrides.update({key: value for key in (LEARNING_RATES if name == 'learning_rate' else (name,))})
    return overrides


def stacks(space: dict[str, list]) -> bool:
    """Whether trials of ``space`` can share one stacked update (every key a row setting)."""
    return all(key.startswith('policy.learn.') and key.split('.', 2)[2] in ROW_SETTINGS for key in _keys(space))


def _keys(space: dict[str, list]) -> list[str]:
    """The config keys ``space`` sets (its ``learning_rate`` sets all three)."""
    return [key for name in space for key in (LEARNING_RATES if name == 'learning_rate' else (name,))]


def tune(input_cfg: str | tuple | list, max_env_step: int, n_trials: int = 16, stack: int = 4,
         timeout: float | None = None, storage: str | None = None, study_name: str | None = None, seed: int = 0,
         space: dict[str, list] | None = None, pruner: str = 'median', ray: str | None = None) -> Any:
    """Search ``space`` (default: the config's ``tune.space``, else ``DEFAULT_SPACE``) over ``n_trials`` trials of
    ``max_env_step`` env steps each (a resumed study counts the trials it has), ``stack`` rows at a time where they
    stack; stop starting trials after ``timeout`` seconds. Writes ``<name>_tune/best_config.py`` and
    ``summary.txt``; returns the Optuna study. ``ray``: the stacked groups as Ray tasks on the cluster at that
    address (``'local'``: a Ray on this machine), sharing the study through ``storage``."""
    if ray is not None and not storage:
        raise ConfigError("tune --ray shares the study between its Ray tasks through --storage: give an Optuna "
                          "storage every node reaches (sqlite:///shared/search.db, or a journal file)")
    optuna = _optuna()
    main, create = read_config(input_cfg) if isinstance(input_cfg, str) else copy.deepcopy(tuple(input_cfg))
    section = main.pop('tune', None) or {}  # (the trials' and the best config's own runs need no search space)
    space = check_space(space or section.get('space') or DEFAULT_SPACE)
    if not all(isinstance(n, int) and n >= 1 for n in (max_env_step, n_trials, stack)):
        raise ConfigError(f"max_env_step, n_trials and stack must be positive ints, got {max_env_step!r}, "
                          f"{n_trials!r} and {stack!r}")
    folder = re.sub(r'_seed\d+$', '', str(main.get('exp_name', 'default_experiment'))) + '_tune'
    first = {name: spec[1][0] if spec[0] == 'categorical' else spec[1] for name, spec in space.items()}
    compile_input(apply_overrides(main, create, sample(optuna.trial.FixedTrial(first), space)), seed,
                  save_cfg=False, pipeline=PIPELINES['tune'])  # the space's keys and values checked, before any trial
    reason = _why_one_at_a_time(main, create, seed, space)
    if reason is not None and stack > 1:
        print(f"trials run one after another, not stacked: {reason}", flush=True)
        stack = 1
    search = SimpleNamespace(config=(main, create), folder=folder, space=space, seed=seed, max_env_step=max_env_step,
                             n_trials=n_trials, stack=stack, timeout=timeout, storage=storage,
                             study_name=study_name or os.path.basename(folder), pruner=pruner)
    study = _study(optuna, search)
    _requeue_interrupted(study, optuna)
    with life_cycle.continued_by(" (the search's trials are in its storage)", None if storage else
                                 "no command (a search without --storage sqlite:///search.db starts over)"):
        if ray is None:
            _search(study, optuna, search)
        else:
            _search_on_ray(ray, search)
    summarise_search(study, optuna, main, create, folder, space, max_env_step)
    return study


def _study(optuna: Any, search: SimpleNamespace) -> Any:
    return optuna.create_study(
        study_name=search.study_name, storage=_storage(optuna, search.storage), load_if_exists=True,
        direction='maximize',
        sampler=_sampler(optuna, search.seed, None),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=search.max_env_step // 3)
        if search.pruner == 'median' else optuna.pruners.NopPruner())


def _sampler(optuna: Any, seed: int, trial_number: int | None) -> Any:
    """TPE whose random draws for trial ``trial_number`` come from (the search's seed, that number): processes that
    share a study (Ray tasks, a continued search) never draw one trial's values twice, and a search repeats."""
    entropy = [seed % 2 ** 32] if trial_number is None else [seed % 2 ** 32, trial_number]
    seed = int(np.random.SeedSequence(entropy).generate_state(1)[0])
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=5, constant_liar=True)


def _storage(optuna: Any, storage: str | None) -> Any:
    """``--storage`` as Optuna takes it: an RDB URL (``sqlite:///search.db``) as it is, a file path as a journal
    file (Optuna's storage for processes sharing a file system, with file locks)."""
    if not storage or '://' in storage:
        return storage
    from optuna.storages import JournalStorage
    try:
        from optuna.storages.journal import JournalFileBackend
    except ImportError:  # Optuna before 4.0
        from optuna.storages import JournalFileStorage as JournalFileBackend
    return JournalStorage(JournalFileBackend(storage))


def _search(study: Any, optuna: Any, search: SimpleNamespace, worker: str | None = None,
            node: str | None = None) -> None:
    """Run stacked groups of trials until the study has ``n_trials`` done (counting those other workers run); a Ray
    task's trials are tagged with its ``worker`` id and its ``node``."""
    start = time.time()

    def remaining() -> int:  # a worker leaves the trials the others run to them
        running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)) if worker else []
        return search.n_trials - _finished(study, optuna) - len(running)
    while (left := remaining()) > 0 and (search.timeout is None or time.time() - start < search.timeout):
        trials = [study.ask() for _ in range(min(search.stack, left))]
        for trial in trials if worker else ():
            trial.set_user_attr('worker', worker)
            trial.set_user_attr('node', node)
        if worker:  # workers that asked at once: the trials past n_trials (by number) are given back unrun
            trials = [trial for trial in trials if not _surplus(study, optuna, trial, search.n_trials)]
        if trials:
            _run_group(study, optuna, trials, search.config, search.folder, search.space, search.seed,
                       search.max_env_step)


def _surplus(study: Any, optuna: Any, trial: Any, n_trials: int) -> bool:
    """Whether ``trial`` is past the search's ``n_trials`` among the trials that count, in number order (another
    worker asked the earlier ones); such a trial is told failed, marked ``surplus``, and not counted."""
    counted = [t for t in study.get_trials(deepcopy=False) if t.number <= trial.number and
               not (t.user_attrs.get('interrupted') or t.user_attrs.get('surplus'))]
    if len(counted) <= n_trials:
        return False
    trial.set_user_attr('surplus', True)
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return True


def _search_on_ray(address: str, search: SimpleNamespace) -> None:
    """As many Ray tasks as stacked groups fill the search (at most the cluster's CPUs), each running groups of the
    shared study; a task retried after a lost node first hands its own unfinished trials back to the study."""
    ray = import_ray('tune --ray')
    join_ray(ray, address)
    workers = max(1, min(math.ceil(search.n_trials / search.stack), int(ray.cluster_resources().get('CPU', 1))))
    task = ray.remote(max_retries=3, retry_exceptions=False)(_search_task)
    ray.get([task.remote(search) for _ in range(workers)])


def _search_task(search: SimpleNamespace) -> None:
    """A Ray task of a search: its trials tagged with its task id, which a retry shares: those a lost node left
    running fail as interrupted and are asked again, so none is lost or counted twice."""
    import ray
    optuna = _optuna()
    context = ray.get_runtime_context()
    worker = context.get_task_id()
    study = _study(optuna, search)
    _requeue_interrupted(study, optuna, worker)
    _search(study, optuna, search, worker, context.get_node_id())


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ImportError("ding_lite tune searches with Optuna, which is not installed: pip install "
                          "'ding-lite[tune]' (or pip install optuna)") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _why_one_at_a_time(main: EasyDict, create: EasyDict, seed: int, space: dict[str, list]) -> str | None:
    if not stacks(space):
        return f"the search space sets {', '.join(space)}: beyond policy.learn's {', '.join(ROW_SETTINGS)} (and " \
               f"learning_rate) a trial may change the networks' shapes or the run's loop"
    cfg = compile_input((main, create), seed, save_cfg=False)
    policy_cls = get_policy_cls(cfg.policy)
    return scheduled_rates(policy_cls, _keys(space)) or why_not_vectorised(policy_cls, cfg.policy)


def _finished(study: Any, optuna: Any) -> int:
    """Trials done: complete, pruned, or failed on their own (not stopped by an interrupted search)."""
    states = optuna.trial.TrialState
    return sum(t.state in (states.COMPLETE, states.PRUNED) or t.state == states.FAIL and
               not (t.user_attrs.get('interrupted') or t.user_attrs.get('surplus')) for t in study.trials)


def _requeue_interrupted(study: Any, optuna: Any, worker: str | None = None) -> None:
    """The trials a stopped search (or a lost Ray task, ``worker``) left running fail as interrupted, and their
    parameters are asked again."""
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if worker is not None and trial.user_attrs.get('worker') != worker:
            continue
        study._storage.set_trial_user_attr(trial._trial_id, 'interrupted', True)
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        study.enqueue_trial(trial.params, skip_if_exists=False)


def _run_group(study: Any, optuna: Any, trials: list[Any], config: tuple, folder: str,
               space: dict[str, list], seed: int, max_env_step: int) -> None:
    """Run ``trials`` of ``config`` (its two parts) as the rows of one run (one row: a plain run) and tell the study
    how each ended."""
    records = [SimpleNamespace(trial=trial, curve=[], errors=[], pruned=False) for trial in trials]
    drawn = []
    for trial in trials:  # each trial's values drawn from a seed of its own (and the study's history)
        study.sampler = _sampler(optuna, seed, trial.number)
        drawn.append(sample(trial, space))
    rows = [(apply_overrides(*config, {**values, 'exp_name': os.path.join(folder, f'trial_{trial.number}')}), seed)
            for trial, values in zip(trials, drawn)]
    pending = iter(records)  # prepare is called on the rows' runs in their order

    def prepare(run: SimpleNamespace) -> None:
        next(pending).episodes = run.evaluator.n_episode
    stop_rules = [functools.partial(_report, record) for record in records]  # each evaluation to its trial
    try:
        train_rows(rows, serial_setup, max_env_step=max_env_step, prepare=prepare, name='tune', stop_rules=stop_rules)
    except KeyboardInterrupt:
        raise  # (the trials stay running: a resumed search asks their parameters again)
    except Exception as error:  # a trial's run failed (a NaN at a large learning rate): the search goes on
        if len(trials) > 1:  # one row's failure ends the stacked run: each trial runs again alone (a new folder)
            print(f"trials {[t.number for t in trials]}, stacked, failed ({type(error).__name__}: {error}); each "
                  f"runs again alone", flush=True)
            for trial in trials:
                _run_group(study, optuna, [trial], config, folder, space, seed, max_env_step)
            return
        print(f"trial {trials[0].number} failed: {type(error).__name__}: {error}", flush=True)
        study.tell(trials[0], state=optuna.trial.TrialState.FAIL)
        return
    for record in records:
        if record.pruned:
            study.tell(record.trial, state=optuna.trial.TrialState.PRUNED)
        else:
            if record.errors:  # the evaluations' noise, for telling the trials apart
                record.trial.set_user_attr('eval_error', sum(record.errors) / len(record.errors))
            study.tell(record.trial, curve_score(record.curve, max_env_step))


def _report(record: SimpleNamespace, train_iter: int, envstep: int, info: dict[str, float]) -> str | None:
    """An evaluation to the trial (the pruner's intermediate value at ``envstep``); why it stops, if pruned."""
    record.curve.append((envstep, info['return_mean']))
    record.errors.append(info['return_std'] / math.sqrt(max(getattr(record, 'episodes', 1), 1)))
    record.trial.report(info['return_mean'], envstep)
    if record.trial.should_prune():
        record.pruned = True
        return f"pruned by the search: below the median of earlier trials at env step {envstep}"
    return None


def curve_score(curve: list[tuple[int, float]], budget: int) -> float:
    """The mean evaluation return over ``[0, budget]`` env steps: the area under the learning curve over the budget,
    between evaluations a straight line (the trapezoid rule: the evaluation at the budget's end counts, as the first
    does), the last one's return holding to the budget's end where it came before."""
    if not curve:
        return -math.inf
    points = sorted(curve)
    points += [(budget, points[-1][1])] if points[-1][0] < budget else []
    area = sum((value + after) / 2 * (nxt - step) for (step, value), (nxt, after) in zip(points, points[1:]))
    return area / (points[-1][0] - points[0][0]) if points[-1][0] > points[0][0] else points[0][1]


def indistinguishable(trials: list[Any], max_env_step: int) -> str | None:
    """A warning where the finished trials' scores spread no wider than two standard errors of an evaluation's mean
    return (their median): at this budget the search's ranking is noise."""
    errors = sorted(t.user_attrs['eval_error'] for t in trials if 'eval_error' in t.user_attrs)
    if len(trials) < 2 or not errors:
        return None
    spread, noise = max(t.value for t in trials) - min(t.value for t in trials), errors[len(errors) // 2]
    if spread > 2 * noise:
        return None
    return (f"warning: the trials' scores spread {spread:.1f}, within the evaluations' noise (standard error "
            f"{noise:.1f} of an evaluation's mean return): {max_env_step} env steps cannot tell these trials apart, "
            f"and the best is chance; try --max-env-step {4 * max_env_step} (or more env.n_evaluator_episode)")


def summarise_search(study: Any, optuna: Any, main: EasyDict, create: EasyDict, folder: str,
                     space: dict[str, list], max_env_step: int) -> str:
    """Print the trials, the best one and the parameters' importances (or, where the trials' scores lie within the
    evaluations' noise, that the budget cannot tell them apart); write ``best_config.py`` (the config with the best
    trial's values) and ``summary.txt`` into ``folder``; returns the summary."""
    states = optuna.trial.TrialState
    lines = [f"search {study.study_name}: {len(study.trials)} trials"]
    for t in study.trials:
        value = f"{t.value:.1f}" if t.value is not None else '-'
        lines.append(f"  trial {t.number:3d}  {t.state.name.lower():9s} {value:>8s}  "
                     + ', '.join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in t.params.items()))
    complete = [t for t in study.trials if t.state == states.COMPLETE]
    os.makedirs(folder, exist_ok=True)
    if complete:
        best = study.best_trial
        overrides = {**sample(optuna.trial.FixedTrial(best.params), space),
                     'exp_name': re.sub(r'_tune$', '', folder) + '_best_seed0'}
        best_main, best_create = apply_overrides(main, create, overrides)
        path = os.path.join(folder, 'best_config.py')
        save_config({**best_main, 'create_config': best_create}, path, overrides,
                    title=f"The config with search {study.study_name}'s best trial ({best.number})")
        lines += [f"best: trial {best.number}, score {best.value:.1f} (mean evaluation return over the budget)",
                  f"wrote {path}"]
        alike = indistinguishable(complete, max_env_step)
        if alike:
            lines.append(alike)
        if len(complete) >= 3:
            with contextlib.suppress(Exception), warnings.catch_warnings():  # (trials too alike to tell apart)
                warnings.simplefilter('ignore')
                importances = optuna.importance.get_param_importances(study)
                lines.append('importances: ' + ', '.join(f"{k} {v:.2f}" for k, v in importances.items()))
    text = '\n'.join(lines)
    atomic_write_text(os.path.join(folder, 'summary.txt'), text + '\n')
    print(text, flush=True)
    return text
