"""A run's config input: a file or a (main, create) pair compiled for a new run or for the run it resumes, and the
run folders and resume points that --resume finds."""
from __future__ import annotations

import copy
import os
import re
from typing import Any

from easydict import EasyDict

from ding_lite.capabilities import check as check_capabilities
from ding_lite.config import ConfigError, apply_overrides, compile_config, compile_env_config, import_create_names, \
    read_config, save_compiled
from ding_lite.registry import POLICY_REGISTRY, SERIAL_COLLECTOR_REGISTRY
from ding_lite.worker import SampleSerialCollector, load_checkpoint
from ding_lite.worker.logger import build_logger
from ding_lite.worker.learner import LATEST
from envs.from_gym import adapted_env, vec_env_setting
from envs.hybrid import HybridSpace
from .capabilities import PIPELINES

_SAID: set[str] = set()  # the notes said already


def compile_input(input_cfg: str | tuple | list, seed: int | None, env_setting: Any = None,
                  **kwargs: Any) -> EasyDict:
    """Compile a config file path or a ``(main_config, create_config)`` pair (``seed`` None: the config's own;
    ``kwargs`` are ``compile_config``'s, ``overrides`` among them), its policy type resolved first
    (``resolve_policy_type``; ``env_setting``: the pipeline's, where it was given one)."""
    if isinstance(input_cfg, str):
        input_cfg = read_config(input_cfg)
    if not (isinstance(input_cfg, (tuple, list)) and len(input_cfg) == 2):
        raise ConfigError(f"input_cfg must be a config file path or a (main_config, create_config) pair, "
                          f"got {type(input_cfg).__name__}")
    main, create = apply_overrides(input_cfg[0], input_cfg[1], kwargs.get('overrides'))
    if env_setting is not None:  # the envs given: total_config.py records how many (read once, here)
        main = _given_envs(main, create, env_setting)
    main, create = resolve_policy_type(main, create, env_setting)
    cfg = compile_config(main, create_cfg=create, seed=seed, **kwargs)
    _check_collector(cfg.policy.collect.collector.get('type') or 'sample')
    return cfg


def _check_collector(kind: str) -> None:
    """The pipelines collect ``n_sample`` transitions a round: a sample collector (``'sample'`` or a subclass of
    it); DI-engine's episode collector is for loops of one's own. ``ConfigError`` naming the type otherwise."""
    if not issubclass(SERIAL_COLLECTOR_REGISTRY.get(kind), SampleSerialCollector):
        raise ConfigError(f"policy.collect.collector.type={kind!r}: the pipelines collect n_sample transitions a "
                          f"round with a sample collector ('sample', or a class of yours that subclasses "
                          f"SampleSerialCollector); '{kind}' is for loops of your own (create_serial_collector)")


def resolve_policy_type(main: EasyDict, create: EasyDict, env_setting: Any = None) -> tuple[EasyDict, EasyDict]:
    """The policy type a config runs, decided once, before it compiles (so its defaults, keys and capability check
    are that type's): a class that declares a ``hybrid_type`` (``'sac'``: ``'hybrid_sac'``) runs as it on an env
    whose actions are a Discrete and a Box (a probe env, made and closed), said once. DI-engine's
    ``policy.multi_agent`` is the compile step's, read from the class's ``multi_agent_type``."""
    create_policy = create.get('policy') or {}
    policy_type = create_policy.get('type') or (main.get('policy') or {}).get('type')
    import_create_names(create)
    cls = POLICY_REGISTRY.get(policy_type) if policy_type in POLICY_REGISTRY else None
    hybrid = vars(cls).get('hybrid_type') if cls is not None else None
    if hybrid is None or not _acts_hybrid(main, create, env_setting):
        return main, create
    _say_once(f"the env acts in a Discrete and a Box (hybrid actions): policy {policy_type!r} runs as {hybrid!r}")
    create = EasyDict(copy.deepcopy(dict(create)))
    create.policy = EasyDict({**create_policy, 'type': hybrid})
    if ((main.get('policy') or {}).get('model') or {}).get('type') == cls.default_model():
        main = EasyDict(copy.deepcopy(dict(main)))
        main.policy.model.pop('type')  # the SAC model named as it is by default: the hybrid policy's own instead
    return main, create


def _given_envs(main: EasyDict, create: EasyDict, env_setting: Any) -> EasyDict:
    """``main`` with the ``env.collector_env_num`` of the gymnasium envs ``env_setting`` gives (as the run reads it)."""
    env_cfg = compile_env_config(main, create)
    vec_env_setting(env_cfg, env_setting)
    main = EasyDict(copy.deepcopy(dict(main)))
    main.env = EasyDict(main.get('env') or {}, collector_env_num=env_cfg.collector_env_num)
    return main


def _say_once(note: str) -> None:
    """``note`` on the console, once a process (a config compiles again for each seed and a resume)."""
    if note not in _SAID:
        _SAID.add(note)
        print(note, flush=True)


def _acts_hybrid(main: EasyDict, create: EasyDict, env_setting: Any) -> bool:
    """Whether the config's env (or ``env_setting``'s) acts in a Discrete and a Box (``envs.hybrid``). A probe that
    cannot be made says no: the compile's checks, or the run's own envs, then say why."""
    try:
        env_cfg = compile_env_config(main, create)
        if env_cfg.get('type') is None and env_setting is None:
            return False
        env_fn, collector_cfgs, _ = vec_env_setting(env_cfg, env_setting)
        env = adapted_env(env_fn, cfg=collector_cfgs[0])
    except Exception:  # a bad env config or env: reported with its own error where the run checks it
        return False
    try:
        return isinstance(env.action_space, HybridSpace)
    finally:
        env.close()


def compile_run(input_cfg: str | tuple | list, seed: int | None, resume: bool | str,
                overrides: dict[str, Any] | None = None, pipeline: str = 'serial',
                compiled: EasyDict | None = None, env_setting: Any = None) -> tuple[EasyDict, str | None]:
    """The compiled config of a training run and, when resuming, the checkpoint to continue.

    A new run gets a fresh folder (``total_config.py`` written); a resumed one writes into the folder of the run it
    continues (``exp_name``'s, or the one holding the checkpoint ``resume`` names) and takes the seed its checkpoint
    records (a different ``seed`` is an error). ``overrides`` (``--set``) are applied, recorded in
    ``total_config.py`` and logged in ``log/summary.txt``. ``pipeline`` (a name of ``PIPELINES``) is the one that
    runs it: a feature it does not declare is refused before anything is written. ``compiled``: the same input
    already compiled unsaved for this seed (a run of many seeds checks its first seed's), checked and saved as it is.
    """
    kwargs = dict(overrides=overrides, pipeline=PIPELINES[pipeline], env_setting=env_setting)
    if not resume:
        if compiled is not None:
            check_capabilities(compiled, POLICY_REGISTRY.get(compiled.policy.type), PIPELINES[pipeline])
            cfg = save_compiled(compiled, overrides=overrides)
        else:
            cfg = compile_input(input_cfg, seed, **kwargs)
        if overrides:  # exp_name as this run's folder (a seed's own, with a time suffix where one existed)
            given = {**overrides, **({'exp_name': cfg.exp_name} if 'exp_name' in overrides else {})}
            build_logger(cfg.exp_name, 'summary', console=True).info(
                'overrides (--set): ' + ', '.join(f"{k}={v!r}" for k, v in given.items()))
        return cfg, None
    cfg = compile_input(input_cfg, seed, save_cfg=False, **kwargs)
    where = str(resume) if resume is not True else cfg.exp_name if seed is not None else _the_run(cfg.exp_name)
    path = find_resume_point(where)
    run_seed = load_checkpoint(path).get('run', {}).get('loop', {}).get('seed', cfg.seed)
    if seed is not None and seed != run_seed:
        raise ConfigError(f"--seed {seed} differs from the seed {run_seed} of the run being resumed ({path}); "
                          f"leave it out or give {run_seed}")
    if run_seed != cfg.seed:
        cfg = compile_input(input_cfg, run_seed, save_cfg=False, **kwargs)
    ckpt_dir = os.path.dirname(os.path.abspath(path))
    if resume is True:  # the run folder picked (the config's own, or the one seed-less --resume found)
        cfg.exp_name = where
    elif os.path.basename(ckpt_dir) == 'ckpt':  # a checkpoint path: the run folder that holds it
        cfg.exp_name = os.path.dirname(ckpt_dir)
    cfg.exp_name = _as_named(cfg.exp_name)
    return cfg, path


def _as_named(folder: str) -> str:
    """A run folder as a user names it (the progress lines, the continue command): relative to the current folder
    where it lies below it, else as it is."""
    relative = os.path.relpath(folder) if os.path.isabs(folder) else folder
    return relative if not relative.startswith(os.pardir) else folder


def _the_run(exp_name: str) -> str:
    """The one run of a ``_seed<K>`` config that ``--resume`` without a seed continues: every seed's folder (and
    its timestamped siblings) with a resume point and not finished is a candidate; several are an error listing
    them, and finished runs alone are one saying so."""
    if re.fullmatch(r'.*_seed\d+', exp_name) is None:  # the config's own folder: nothing to pick
        return exp_name
    candidates = resumable_runs(exp_name)
    runs = [run for run in candidates if not run_state(run).startswith('finished')]
    if candidates and not runs:
        listed = '; '.join(f"{run} ({run_state(run)})" for run in candidates)
        raise ConfigError(f"--resume without a seed: every run of this config has finished: {listed}. Run without "
                          f"--resume for a new run, or continue one with --resume FOLDER and a larger "
                          f"--max-env-step")
    if len(runs) > 1:
        listed = '; '.join(f"{run} ({run_state(run)})" for run in runs)
        raise ConfigError(f"--resume without a seed: {len(runs)} runs of this config can be resumed: {listed}. Give "
                          f"the run's seed (-s K) or its folder (--resume FOLDER)")
    return runs[0] if runs else exp_name


def resumable_runs(exp_name: str) -> list[str]:
    """The folders of ``exp_name``'s runs that hold a complete resume point: for a ``<name>_seed<K>`` name every
    seed's (and the timestamped siblings ``compile_config`` makes), else ``exp_name``'s alone."""
    match = re.fullmatch(r'(.*_seed)\d+', exp_name)
    if match is None:
        return [exp_name] if os.path.isfile(os.path.join(exp_name, 'ckpt', LATEST)) else []
    parent, base = os.path.split(match.group(1))
    name = re.compile(re.escape(base) + r'\d+(_\d{6}_\d{6}_[0-9a-f]{4})?')
    folders = sorted(entry for entry in os.listdir(parent or '.') if name.fullmatch(entry))
    return [os.path.join(parent, f) for f in folders if os.path.isfile(os.path.join(parent, f, 'ckpt', LATEST))]


def run_state(run: str) -> str:
    """``'finished at env step N'`` or ``'interrupted at env step N'`` for a run folder with a resume point."""
    state = load_checkpoint(find_resume_point(run))
    envstep = state.get('last_envstep', 0)
    if (state.get('run', {}).get('loop') or {}).get('ended'):  # how the run ended, in its last resume point
        return f"finished at env step {envstep}"
    summary = os.path.join(run, 'log', 'summary.txt')
    lines = open(summary).read().splitlines() if os.path.isfile(summary) else []
    ends = [line for line in lines if re.search(r'\] (finished|interrupted) ', line)]
    finished = bool(ends) and '] finished ' in ends[-1] and f": {envstep} env steps," in ends[-1]
    return f"{'finished' if finished else 'interrupted'} at env step {envstep}"


def find_resume_point(where: str) -> str:
    """The checkpoint ``where`` names: a checkpoint file, or an experiment (or its ``ckpt``) folder, whose
    ``ckpt/latest`` names the newest complete checkpoint. Temp files a kill left behind are removed."""
    if os.path.isfile(where):
        return where
    if not os.path.exists(where):
        raise FileNotFoundError(f"nothing to resume: no checkpoint file or run folder {where!r}; run without "
                                f"--resume to start a new run, or give --resume a run folder (its ckpt/latest is "
                                f"continued) or a checkpoint in its ckpt/")
    ckpt_dir = where if os.path.basename(os.path.normpath(where)) == 'ckpt' else os.path.join(where, 'ckpt')
    latest = os.path.join(ckpt_dir, LATEST)
    if not os.path.isfile(latest):
        raise FileNotFoundError(f"nothing to resume: {latest} does not exist (no complete checkpoint of "
                                f"{where!r} was written yet); run without --resume to start a new run")
    with open(latest) as f:
        path = os.path.join(ckpt_dir, f.read().strip())
    if not os.path.isfile(path):
        raise FileNotFoundError(f"nothing to resume: {latest} names {path}, which does not exist")
    for name in os.listdir(ckpt_dir):
        if name.startswith('.') and name.endswith('.tmp'):
            os.remove(os.path.join(ckpt_dir, name))
    return path
