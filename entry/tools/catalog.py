"""What ``ding_lite list`` and ``ding_lite config NAME`` print for the built-in registrations, kept in
``catalog.json`` beside this module so that they answer without importing torch and every registered module
(~1 s on 2 cores).

The file is written from the live registries with a hash of the sources it was read from: by ``make install``
(``python -m entry.tools.catalog``), and by the first ``list`` or ``config`` after the sources changed (that one
answers from the live registries). Where a package registers plugins through entry points the live registries
always answer. The file is not tracked: it is made where the package is installed.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'catalog.json')
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ('ding_lite', 'policy_zoo', 'envs')  # what registers the built-ins, and declares their configs


def source_hash() -> str:
    """A hash of every source file the answers come from."""
    digest = hashlib.sha256()
    for package in SOURCES:
        for folder, dirs, files in sorted(os.walk(os.path.join(ROOT, package))):
            dirs.sort()
            for name in sorted(f for f in files if f.endswith('.py')):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, ROOT).encode())
                with open(path, 'rb') as f:
                    digest.update(f.read())
    return digest.hexdigest()


def build() -> dict[str, Any]:
    """The answers of the live registries for the built-in registrations (a process that registered its own
    classes writes none of them): ``list`` per kind (all kinds under ''), ``config`` per ``(kind, name)``."""
    from .discover import CONFIG_KINDS, KINDS, _registry, describe_config, list_registered
    configs = {f"{kind}:{name}": describe_config(name, kind) for kind in CONFIG_KINDS
               for name in _registry(kind).keys() if builtin(_registry(kind).get(name))}
    configs['parallel:parallel'] = describe_config('parallel', 'parallel')
    return {'source_hash': source_hash(), 'kinds': list(CONFIG_KINDS) + ['parallel'],
            'list': {kind or '': list_registered(kind, keep=builtin) for kind in [None, *KINDS]},
            'config': configs}


def builtin(obj: Any) -> bool:
    """Whether a registered ``obj`` is one of the framework's own (defined in ``SOURCES``), not a user's or a
    test's."""
    return (getattr(obj, '__module__', None) or '').split('.')[0] in SOURCES


def write() -> str:
    """Write the catalog (atomically: a reader never sees half of it)."""
    from ding_lite.utils.checkpoint import atomic_write_text
    atomic_write_text(PATH, json.dumps(build(), indent=0, sort_keys=True) + '\n')
    return PATH


def refresh() -> bool:
    """Write the catalog where it is missing or stale and no plugin adds to the registries (and the folder is
    writable); whether it did."""
    catalog = _read()
    if _plugins() or catalog is not None and catalog.get('source_hash') == source_hash():
        return False
    try:
        write()
    except OSError:  # an install the user cannot write to: the live registries answer
        return False
    return True


def _plugins() -> bool:
    from importlib.metadata import entry_points
    from ding_lite.registry import PLUGIN_GROUP
    return bool(list(entry_points(group=PLUGIN_GROUP)))


def _read() -> dict[str, Any] | None:
    try:
        with open(PATH) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _current() -> dict[str, Any] | None:
    """The catalog where it still describes these sources and no plugin package adds to the registries."""
    catalog = _read()
    if catalog is None or catalog.get('source_hash') != source_hash() or _plugins():
        return None
    return catalog


def answer(tool: str, name: str | None = None, kind: str | None = None) -> str | None:
    """What ``ding_lite list [kind]`` or ``ding_lite config name [--kind kind]`` prints, from the catalog; None
    where the live registries must answer (an unknown name or kind, changed sources, plugins)."""
    catalog = _current()
    if catalog is None:
        return None
    if tool == 'list':
        return catalog['list'].get(kind or '')
    kinds = [kind] if kind else catalog['kinds']
    return next((catalog['config'][key] for each in kinds if (key := f"{each}:{name}") in catalog['config']), None)


if __name__ == '__main__':
    print(f"wrote {write()}")
