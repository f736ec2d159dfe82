"""What exists, without reading the source: registered names, default configs with every key explained, the zoo."""
from __future__ import annotations

import ast
import glob
import os
from typing import Any, Callable

from ding_lite.config import ParallelSection, policy_default_config, read_config
from ding_lite.registry import BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY, \
    REWARD_MODEL_REGISTRY, WRAPPER_REGISTRY, Registry, did_you_mean
from ding_lite.utils.default_config import config_docs

KINDS: dict[str, Registry] = {'policies': POLICY_REGISTRY, 'models': MODEL_REGISTRY, 'envs': ENV_REGISTRY,
                              'env_managers': ENV_MANAGER_REGISTRY, 'buffers': BUFFER_REGISTRY,
                              'wrappers': WRAPPER_REGISTRY, 'reward_models': REWARD_MODEL_REGISTRY}
# what `ding_lite config NAME` looks NAME up in, in this order: (kind, the config section it fills)
CONFIG_KINDS = {'policy': 'policy', 'env': 'env', 'env_manager': 'env.manager', 'buffer': 'policy.other.replay_buffer',
                'model': 'policy.model'}


def summary(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring, as one line."""
    doc = (getattr(obj, '__doc__', None) or '').strip()
    return ' '.join(doc.split('\n\n')[0].split()) if doc else '(no description)'


def list_registered(kind: str | None = None, keep: Callable[[Any], bool] | None = None) -> str:
    """The registered names of ``kind`` (all kinds when None), one per line with its description; with ``keep``
    those whose registered object it keeps (``catalog.json``'s: the built-ins)."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r};{did_you_mean(kind, KINDS)} expected one of {', '.join(KINDS)}")
    blocks = []
    for name, registry in KINDS.items():
        if kind not in (None, name):
            continue
        entries = {key: registry.get(key) for key in registry.keys()}
        entries = {key: obj for key, obj in entries.items() if keep(obj)} if keep else entries
        first = {}  # an alias is a second name of a class already listed
        lines = []
        for key, obj in entries.items():
            if obj in first.values():
                alias_of = next(k for k, v in first.items() if v is obj)
                lines.append((key, f"alias of {alias_of}"))
            else:
                first[key] = obj
                lines.append((key, summary(obj)))
        width = max(len(key) for key, _ in lines)
        blocks.append(f"{name}:\n" + '\n'.join(f"  {key:<{width}}  {text}" for key, text in lines))
    return '\n\n'.join(blocks)


def describe_config(name: str, kind: str | None = None) -> str:
    """The default config of the registered ``name`` (a policy with its model, workers and buffer; an env; an env
    manager; a buffer; a model; or ``parallel``), as config source with every key explained."""
    if name == 'parallel' and kind in (None, 'parallel'):
        return _header('parallel', ParallelSection) + render('parallel', ParallelSection.default_config(),
                                                              config_docs(ParallelSection))
    kinds = [kind] if kind else list(CONFIG_KINDS)
    for each in kinds:
        if each not in CONFIG_KINDS:
            raise ValueError(f"unknown kind {each!r};{did_you_mean(each, CONFIG_KINDS)} expected one of "
                             f"{', '.join(CONFIG_KINDS)} or parallel")
        registry = _registry(each)
        if name in registry:
            cls = registry.get(name)
            if each == 'policy':
                default, docs = policy_default_config(name)
            else:
                default, docs = cls.default_config(), config_docs(cls)
            section = CONFIG_KINDS[each].rsplit('.', 1)[-1]
            return _header(f"{each} {name!r} (section {CONFIG_KINDS[each]})", cls) + render(section, default, docs)
    known = sorted({key for each in kinds if each in CONFIG_KINDS for key in _registry(each).keys()})
    raise KeyError(f"nothing registered as {name!r};{did_you_mean(name, known)} `ding_lite list` shows what is")


def _registry(kind: str) -> Registry:
    return {'policy': POLICY_REGISTRY, 'env': ENV_REGISTRY, 'env_manager': ENV_MANAGER_REGISTRY,
            'buffer': BUFFER_REGISTRY, 'model': MODEL_REGISTRY}[kind]


def _header(what: str, cls: type) -> str:
    return f"# {what}: {summary(cls)}\n"


def render(name: str, tree: dict, docs: dict[str, str], prefix: str = '', indent: int = 0) -> str:
    """``tree`` as ``name=dict(...)`` source, each key with its description as a comment."""
    pad = '    ' * indent
    lines = [_commented(f"{pad}{name}=dict(", docs.get(prefix.rstrip('.')) if prefix else None)]
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            lines.append(render(key, value, docs, f"{path}.", indent + 1).rstrip('\n') + ',')
        else:
            lines.append(_commented(f"{pad}    {key}={value!r},", docs.get(path, '(no description)')))
    lines.append(f"{pad})")
    return '\n'.join(lines) + ('\n' if indent == 0 else '')


def _commented(code: str, comment: str | None) -> str:
    return f"{code:<48}  # {comment}" if comment else code


def zoo_configs(root: str | None = None) -> list[dict[str, str]]:
    """Each config of ``dizoo_configs/``: file, env, policy, stop value and the expected result its docstring
    states (a paragraph starting ``Expected:``)."""
    if root is None:
        import dizoo_configs
        root = os.path.dirname(dizoo_configs.__file__)
    rows = []
    for path in sorted(glob.glob(os.path.join(root, '*_config.py'))):
        main, create = read_config(path)
        with open(path) as f:
            doc = ast.get_docstring(ast.parse(f.read())) or ''
        paragraphs = [' '.join(p.split()) for p in doc.split('\n\n')]
        expected = next((p[len('Expected:'):].strip() for p in paragraphs if p.startswith('Expected:')), '-')
        env = main.get('env', {})
        env_id = env.get('env_id') or ENV_REGISTRY.get(create.env.type).default_config().get('env_id') or ''
        rows.append({'config': os.path.basename(path), 'env': f"{create.env.type} {env_id}".strip(),
                     'policy': create.policy.type, 'stop_value': str(env.get('stop_value', '-')),
                     'expected': expected})
    return rows


def zoo_table(root: str | None = None) -> str:
    rows = zoo_configs(root)
    keys = ['config', 'env', 'policy', 'stop_value']
    widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in keys}
    lines = ['  '.join(f"{k:<{widths[k]}}" for k in keys) + '  expected']
    for row in rows:
        lines.append('  '.join(f"{row[k]:<{widths[k]}}" for k in keys) + f"  {row['expected']}")
    return '\n'.join(lines)
