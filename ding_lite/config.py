"""DI-engine style two-part configs compiled against the registered classes' defaults. Reading and saving a config
file is ``config_files``', the strict merge ``config_merge``'s, what features need of each other ``config_checks``';
this module hands their public names on."""
from __future__ import annotations

import copy
import os
import re
import time
import uuid
import warnings
from typing import Any

from easydict import EasyDict

from .capabilities import Pipeline, check as check_capabilities
from .config_checks import agent_id_input, check_agent_axis, check_batch_fits, check_env_id, check_priority, \
    her_buffer_type, info_stats_spec, multi_agent_type, reward_clip_bounds
from .config_files import CREATE_PARTS, apply_overrides, parse_overrides, read_config, save_config
from .config_merge import ALSO_NAMED, LEGACY_KEYS, check_free_values, merge_strict
from .registry import BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, LEARNER_REGISTRY, MODEL_REGISTRY, \
    POLICY_REGISTRY, SERIAL_COLLECTOR_REGISTRY, SERIAL_EVALUATOR_REGISTRY, defining_module, did_you_mean, \
    import_names, module_folder
from .utils.curriculum import parse_environment_parameters
from .utils.default_config import ConfigError, ConfigWarning, LazyDocs, class_default_config, config_docs, \
    deep_merge, docs_of
from .utils.device import resolve_device

TOP_LEVEL_KEYS = ('exp_name', 'seed', 'env', 'policy', 'parallel', 'logger', 'tune')


class ParallelSection:
    """The top-level ``parallel`` section: the parallel pipeline's settings (the serial pipelines ignore it)."""

    config = dict(
        collector_num=2,               # collector actors, each with its own env manager of collector_env_num envs
        ray_address=None,              # 'auto' or 'host:port': join that cluster; None: RAY_ADDRESS, else start locally
        num_cpus_per_collector=1.0,    # CPUs Ray reserves for each collector actor (the evaluator takes 1)
        weight_sync_interval=10,       # train iterations between weight broadcasts to the actors
        max_actor_restarts=3,          # replacements of each failed actor before the run stops with an error
        placement_timeout=30.0,        # seconds a new actor may wait for a CPU; then it asks for what is left
                                       # (at once where a lost node left too few CPUs for it)
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)


class LoggerSection:
    """The top-level ``logger`` section: where a run's scalars go besides tensorboard and ``evaluator.csv``."""

    config = dict(
        wandb=dict(                    # Weights & Biases (pip install 'ding-lite[track]'): scalars, config, run name
            track=False,               # send the run there (the CLI's --track); on too when a project is set
            project=None,              # the W&B project; None: 'ding_lite'
            entity=None,               # the W&B team or user; None: your default
            mode=None,                 # 'online', 'offline' (no network; sync later), 'disabled'; None: WANDB_MODE
        ),
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)


PARALLEL_CONFIG = ParallelSection.config
_DI_ENGINE_PACKAGES = ('dizoo.', 'ding.')
# (field, key, registry, default type) of the worker sub-configs filled under policy
_WORKERS = (('learn', 'learner', LEARNER_REGISTRY, 'base'),
            ('collect', 'collector', SERIAL_COLLECTOR_REGISTRY, 'sample'),
            ('eval', 'evaluator', SERIAL_EVALUATOR_REGISTRY, 'interaction'))


def _type_of(create_cfg: dict, main_part: dict, part: str, fallback: str | None = None) -> str | None:
    return (create_cfg.get(part) or {}).get('type') or main_part.get('type') or fallback


def _import_create_names(create_cfg: dict) -> list[str]:
    """Import the create config's ``import_names``; return those imported. DI-engine's own modules (``dizoo.``,
    ``ding.``) are skipped, with one warning, where ding_lite registers the part's type itself."""
    names = [(name, part, value.get('type')) for part, value in create_cfg.items() if isinstance(value, dict)
             for name in value.get('import_names') or []]
    names += [(name, None, None) for name in create_cfg.get('import_names') or []]
    imported = [name for name, _, _ in names if not name.startswith(_DI_ENGINE_PACKAGES)]
    # first: the user's modules may register the types DI-engine's would
    import_names(imported, create_cfg.get('import_paths') or ())
    skipped = []
    for name, part, type_ in names:
        if not name.startswith(_DI_ENGINE_PACKAGES):
            continue
        if part in CREATE_PARTS and type_ is not None and type_ in CREATE_PARTS[part]:
            skipped.append(f"{name} ({part} {type_!r})")
        else:
            import_names([name])
            imported.append(name)
    if skipped:
        warnings.warn(f"skipped DI-engine import_names {', '.join(skipped)}: ding_lite registers these types "
                      f"itself", ConfigWarning, stacklevel=3)
    return imported


def policy_default_config(policy_type: str, policy_user: dict | None = None, buffer_type: str = 'naive',
                          overrides: dict[str, type | None] | None = None) -> tuple[EasyDict, LazyDocs]:
    """The whole default ``policy`` tree of ``policy_type``, with its model, learner, collector, evaluator and
    replay buffer merged in, and ``{dotted key: description}`` for it (from where each class declares it; read when
    first asked)."""
    policy_user = policy_user or {}
    policy_cls = POLICY_REGISTRY.get(policy_type)
    default = EasyDict(policy_cls.default_config())
    parts = [(f"{field}.{name}", cls) for (field, name), cls in _worker_classes(policy_user, overrides or {}).items()]
    model_type = (policy_user.get('model') or {}).get('type') or policy_cls.default_model()
    if model_type in MODEL_REGISTRY:
        parts.append(('model', MODEL_REGISTRY.get(model_type)))
    parts.append(('other.replay_buffer', BUFFER_REGISTRY.get(buffer_type)))
    for where, cls in parts:
        node = default
        for key in where.split('.')[:-1]:
            node = node.setdefault(key, EasyDict())
        last = where.split('.')[-1]
        # the class's defaults under what the policy declares for it (SAC: twin critics, a 1e6 buffer)
        node[last] = deep_merge(cls.default_config(), node.get(last) or {})
    default.model.setdefault('type', None)

    def docs() -> dict[str, str]:
        found = dict(config_docs(policy_cls))
        if model_type in MODEL_REGISTRY:
            found['model.type'] = "the registered model name; None: the policy's default"
        for where, cls in parts:
            found.update({f"{where}.{key}": text for key, text in config_docs(cls).items()})
        return found
    return default, LazyDocs(docs)


def _worker_classes(policy_cfg: dict, overrides: dict[str, type | None]) -> dict[tuple[str, str], type]:
    """The learner/collector/evaluator classes whose defaults fill ``policy.{learn,collect,eval}``."""
    classes = {}
    for field, name, registry, default_type in _WORKERS:
        part = policy_cfg.get(field)
        worker = part.get(name) if isinstance(part, dict) else None  # a non-dict is reported by merge_strict
        worker_type = (worker.get('type') if isinstance(worker, dict) else None) or default_type
        if overrides.get(name) is None and worker_type not in registry:
            try:
                registry.get(worker_type)  # its message: a did-you-mean and the registered names
            except KeyError as error:
                raise ConfigError(f"policy.{field}.{name}.type: {error.args[0]}") from None
        classes[(field, name)] = overrides.get(name) or registry.get(worker_type)
    return classes


def compile_config(
        main_cfg: dict | tuple,
        create_cfg: dict | None = None,
        seed: int | None = None,
        save_cfg: bool = True,
        save_path: str = 'total_config.py',
        renew_dir: bool = True,
        learner: type | None = None,
        collector: type | None = None,
        evaluator: type | None = None,
        overrides: dict[str, Any] | None = None,
        pipeline: Pipeline | None = None,
) -> EasyDict:
    """Merge the registered classes' defaults under ``main_cfg`` and return the full, checked config.

    ``main_cfg`` may also be a ``(main_config, create_config)`` pair. Types come from ``create_cfg``
    (falling back to ``main_cfg``); its ``import_names`` are imported first so plugins register. ``seed`` None
    takes the config's own ``seed`` (a saved ``total_config.py`` has one), else 0. With ``save_cfg`` and
    ``renew_dir``, an ``exp_name`` folder that already exists gets a time suffix, so an earlier run's
    checkpoints and logs are never touched. ``overrides`` (``{dotted key: value}``, ``--set``) are set first and
    recorded at the top of ``total_config.py``. A combination of features that the policy class (or ``pipeline``,
    where given) does not declare is refused (``ding_lite.capabilities``) before anything is written.
    """
    if isinstance(main_cfg, (tuple, list)):
        main_cfg, create_cfg = main_cfg
    main_cfg, create_cfg = apply_overrides(main_cfg, create_cfg, overrides)
    imported = _import_create_names(create_cfg)
    for key in main_cfg:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(f"unknown top-level config key {key!r};{did_you_mean(key, TOP_LEVEL_KEYS)} "
                              f"expected only {', '.join(TOP_LEVEL_KEYS)}")
    policy = _compile_policy(main_cfg.get('policy', EasyDict()), create_cfg,
                             dict(learner=learner, collector=collector, evaluator=evaluator))
    seed = main_cfg.get('seed', 0) if seed is None else seed
    cfg = EasyDict(exp_name=seeded_exp_name(main_cfg.get('exp_name', 'default_experiment'), int(seed)),
                   seed=int(seed), policy=policy,
                   env=_compile_env(main_cfg.get('env', EasyDict()), create_cfg),
                   parallel=_compile_parallel(main_cfg.get('parallel') or EasyDict()),
                   logger=merge_strict(LoggerSection.default_config(), main_cfg.get('logger') or {}, 'logger',
                                       docs_of(LoggerSection, 'logger.')))
    if main_cfg.get('tune') is not None:  # kept (total_config.py can be searched again); training ignores it
        cfg.tune = _compile_tune(main_cfg.tune)
    for mode, env_key in (('collect', 'collector_env_num'), ('eval', 'evaluator_env_num')):
        if 'env_num' in cfg.policy[mode]:  # declared: set as DI-engine's compile_config does, the env's count rules
            cfg.policy[mode].env_num = cfg.env.get(env_key, 1)
    agent_id_input(cfg)
    check_agent_axis(cfg)
    evaluator_cfg = policy.eval.get('evaluator', {})
    for key, env_key in (('n_episode', 'n_evaluator_episode'), ('stop_value', 'stop_value')):
        if key in evaluator_cfg and evaluator_cfg[key] is None:  # DI-engine keeps these under env
            evaluator_cfg[key] = cfg.env.get(env_key)
    cfg.create_config = EasyDict(
        env=dict(type=cfg.env.type), env_manager=dict(type=cfg.env.manager.type), policy=dict(type=policy.type),
        replay_buffer=dict(type=policy.other.replay_buffer.type), import_names=sorted(set(imported)))
    _record_user_modules(cfg, create_cfg.get('import_paths') or [])
    check_capabilities(cfg, POLICY_REGISTRY.get(cfg.policy.type), pipeline)
    return save_compiled(cfg, save_path, renew_dir, overrides) if save_cfg else cfg


def save_compiled(cfg: EasyDict, save_path: str = 'total_config.py', renew_dir: bool = True,
                  overrides: dict[str, Any] | None = None) -> EasyDict:
    """``compile_config``'s last step for a config it compiled without saving: ``cfg`` (its ``exp_name`` given a time
    suffix where that folder exists, with ``renew_dir``: an earlier run is never touched) written to its folder."""
    if renew_dir and os.path.exists(cfg.exp_name):  # as DI-engine: never write into an old run
        cfg.exp_name = f"{cfg.exp_name}_{time.strftime('%y%m%d_%H%M%S')}_{uuid.uuid4().hex[:4]}"
    save_config(cfg, os.path.join(cfg.exp_name, save_path), overrides)
    return cfg


def _compile_tune(tune: Any) -> EasyDict:
    """The top-level ``tune`` section: ``ding_lite tune``'s search space, ``dict(space={config key: [kind, ...]})``
    (its kinds are checked by the search)."""
    if not (isinstance(tune, dict) and set(tune) == {'space'} and isinstance(tune['space'], dict)):
        raise ConfigError(f"the top-level tune section must be dict(space={{config key: [kind, ...]}}), ding_lite "
                          f"tune's search space; got {tune!r}")
    return EasyDict(tune)


def _record_user_modules(cfg: EasyDict, paths: list[str]) -> None:
    """Add the modules that registered the run's policy, model, env, env manager, buffer and workers to
    ``create_config.import_names``, and the folders of all its user modules to ``import_paths``, so that the saved
    config, ``load_policy`` and ``--resume`` find them in a fresh process, from any folder."""
    used = [(POLICY_REGISTRY, cfg.policy.type), (MODEL_REGISTRY, cfg.policy.model.get('type')),
            (ENV_REGISTRY, cfg.env.get('type')), (ENV_MANAGER_REGISTRY, cfg.env.manager.get('type')),
            (BUFFER_REGISTRY, cfg.policy.other.replay_buffer.type)]
    used += [(registry, cfg.policy[field][name].get('type')) for field, name, registry, _ in _WORKERS]
    names = set(cfg.create_config.import_names)
    names.update(defining_module(registry.get(type_)) for registry, type_ in used
                 if type_ is not None and type_ in registry)
    names.discard(None)
    cfg.create_config.import_names = sorted(names)
    paths = list(dict.fromkeys([*paths, *filter(None, map(module_folder, cfg.create_config.import_names))]))
    if paths:
        cfg.create_config.import_paths = paths


def seeded_exp_name(exp_name: str, seed: int) -> str:
    """DI-engine's ``<name>_seed<K>`` convention follows the run's seed: ``<name>_seed<seed>``; any other name as
    it is."""
    match = re.fullmatch(r'(.*_seed)(\d+)', str(exp_name))
    return f"{match.group(1)}{seed}" if match else exp_name


def _compile_policy(policy_user: dict, create_cfg: dict, overrides: dict[str, type | None]) -> EasyDict:
    policy_type = _type_of(create_cfg, policy_user, 'policy')
    if policy_type is None:
        raise ConfigError("no policy type: set create_config.policy.type (e.g. 'sac')")
    policy_type = multi_agent_type(policy_type, policy_user, _type_of(create_cfg, {}, 'env'))
    buffer_type = _type_of(create_cfg, (policy_user.get('other') or {}).get('replay_buffer') or {},
                           'replay_buffer') or ('priority' if policy_user.get('priority') else 'naive')  # DI-engine's
    buffer_type = her_buffer_type(policy_user, buffer_type)
    policy_default, docs = policy_default_config(policy_type, policy_user, buffer_type, overrides)
    policy = merge_strict(policy_default, policy_user, 'policy',
                          LazyDocs(lambda: {f'policy.{k}': v for k, v in docs.items()}))
    policy.type = policy_type
    check_priority(policy, buffer_type)
    policy.other.replay_buffer.type = buffer_type
    check_batch_fits(policy)
    getattr(POLICY_REGISTRY.get(policy_type), 'check_config', lambda cfg: None)(policy)
    policy.device = resolve_device(policy.get('cuda', False), policy.get('device'))
    buffer = policy.other.replay_buffer  # on the learner's device unless set: with cuda, a batch never crosses PCIe
    if buffer.get('device'):
        buffer.device = resolve_device(False, buffer.device)
    elif policy.device != 'cpu':  # a CPU run saves None: its total_config.py re-run with cuda=True follows the GPU
        buffer.device = policy.device
    return policy


def import_create_names(create_cfg: dict) -> None:
    """The create config's ``import_names`` (each part's and its own, from its ``import_paths``) imported, as
    ``compile_config`` imports them, without its warnings (it says them once)."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ConfigWarning)
        _import_create_names(create_cfg)


def compile_env_config(main_cfg: dict, create_cfg: dict) -> EasyDict:
    """The env section alone, as ``compile_config`` compiles it: a probe env's config, read before the rest (the
    policy type a config runs can depend on the env's action space)."""
    import_create_names(create_cfg)
    return _compile_env(copy.deepcopy(main_cfg.get('env') or EasyDict()), create_cfg)


def _compile_env(env_user: dict, create_cfg: dict) -> EasyDict:
    """The env section: strict against the keys the env class declares (free-form for a class that declares none,
    or without a type: the user's own env reads it), and the manager's section strict against the manager's."""
    env_type = _type_of(create_cfg, env_user, 'env')
    env_cls = ENV_REGISTRY.get(env_type) if env_type else None
    if env_cls is not None and getattr(env_cls, 'declares_config', lambda: True)():
        user = {k: v for k, v in env_user.items() if k not in ('manager', 'type', 'import_names')}
        env = merge_strict(env_cls.default_config(), user, 'env', docs_of(env_cls, 'env.'))
        env.manager = copy.deepcopy(env_user.get('manager') or {})
    else:
        env = deep_merge(env_cls.default_config() if env_cls else {}, env_user)
    manager_type = _type_of(create_cfg, env.get('manager') or {}, 'env_manager', 'base')
    if manager_type in ENV_MANAGER_REGISTRY:
        manager_cls = ENV_MANAGER_REGISTRY.get(manager_type)
        env.manager = merge_strict(EasyDict(manager_cls.default_config()), env.get('manager') or {}, 'env.manager',
                                   docs_of(manager_cls, 'env.manager.'))
        getattr(manager_cls, 'check_config', lambda cfg: None)(env.manager)
    check_free_values(env, 'env')
    check_env_id(env.get('env_id'))
    reward_clip_bounds(env.get('reward_clip'))
    info_stats_spec(env.get('info_stats'))
    parse_environment_parameters(env.get('environment_parameters'))
    if env.get('environment_parameters_via', 'make') not in ('make', 'reset'):
        raise ConfigError(f"env.environment_parameters_via must be 'make' (gymnasium.make keywords) or 'reset' "
                          f"(reset options), got {env.environment_parameters_via!r}")
    env.type = env_type
    env.manager = EasyDict(env.get('manager') or {}, type=manager_type)
    return env


def _compile_parallel(parallel_user: dict) -> EasyDict:
    parallel = merge_strict(ParallelSection.default_config(), parallel_user, 'parallel',
                            docs_of(ParallelSection, 'parallel.'))
    address = parallel.ray_address
    if address is not None and not (isinstance(address, str) and address):
        raise ConfigError(f"config key 'parallel.ray_address' must be None (start Ray locally), 'auto' or "
                          f"'host:port', got {address!r}")
    if not parallel.placement_timeout > 0:
        raise ConfigError(f"config key 'parallel.placement_timeout' must be a number of seconds > 0, got "
                          f"{parallel.placement_timeout!r}")
    return parallel


__all__ = ['ALSO_NAMED', 'ConfigError', 'ConfigWarning', 'LEGACY_KEYS', 'PARALLEL_CONFIG', 'ParallelSection',
           'LoggerSection', 'read_config', 'compile_config', 'compile_env_config', 'import_create_names',
           'save_config', 'parse_overrides', 'apply_overrides', 'merge_strict', 'deep_merge', 'class_default_config',
           'policy_default_config']
