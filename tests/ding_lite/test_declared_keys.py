"""No setting accepted and ignored: every key a registered class declares in its ``config`` is read somewhere in the
project's code (an attribute read ``.key`` or the key as a string, ``cfg['key']``, ``cfg.get('key')``)."""
from __future__ import annotations

import os
import re

from ding_lite.config import LoggerSection, ParallelSection
from ding_lite.registry import BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, LEARNER_REGISTRY, \
    POLICY_REGISTRY, SERIAL_COLLECTOR_REGISTRY, SERIAL_EVALUATOR_REGISTRY
from tests.conftest import ROOT

PACKAGES = ('ding_lite', 'policy_zoo', 'envs', 'entry')
# Keys kept for DI-engine's configs that are read under another name or refused by a check (none today).
NOT_READ_BY_NAME: dict[str, str] = {}


def _source() -> str:
    """The project's code, with each class's ``config = dict(...)`` declaration left out."""
    texts = []
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            texts += [open(os.path.join(folder, f)).read() for f in files if f.endswith('.py')]
    text = re.sub(r'\n    config = dict\(\n.*?\n    \)\n', '\n', '\n'.join(texts), flags=re.S)
    return re.sub(r'\n    config = dict\([^\n]*\)[^\n]*\n', '\n', text)  # one-line declarations


def _leaves(tree: dict, prefix: str = '') -> list[str]:
    keys = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        keys += _leaves(value, path + '.') if isinstance(value, dict) and value else [path]
    return keys


def _declaring_classes() -> list[type]:
    classes = [ParallelSection, LoggerSection]
    for registry in (POLICY_REGISTRY, ENV_REGISTRY, ENV_MANAGER_REGISTRY, BUFFER_REGISTRY, LEARNER_REGISTRY,
                     SERIAL_COLLECTOR_REGISTRY, SERIAL_EVALUATOR_REGISTRY):
        classes += [registry.get(name) for name in registry.keys()]
    return [cls for cls in dict.fromkeys(classes) if isinstance(getattr(cls, 'config', None), dict)
            and cls.__module__.split('.')[0] in PACKAGES]  # the project's own (tests register theirs too)


def unread_keys(source: str) -> list[str]:
    """``'Class: dotted.key'`` for each declared key whose last name the code never reads."""
    unread = []
    for cls in _declaring_classes():
        for path in _leaves(cls.default_config()):
            name = path.split('.')[-1]
            # read as an attribute, a string key, or a parameter of a function a section is splatted into
            read = re.search(rf"\.{name}\b(?!\s*=[^=])|['\"]{name}['\"]|def \w+\([^)]*\b{name}\b", source)
            if not read and path not in NOT_READ_BY_NAME:
                unread.append(f"{cls.__name__}: {path}")
    return sorted(set(unread))


def test_every_declared_key_is_read_somewhere():
    assert unread_keys(_source()) == []


def test_the_sweep_catches_a_key_declared_and_read_by_nothing():
    from policy_zoo import SACPolicy
    SACPolicy.config['learn']['declared_but_unread_xyz'] = 1
    try:
        assert 'SACPolicy: learn.declared_but_unread_xyz' in unread_keys(_source())
    finally:
        del SACPolicy.config['learn']['declared_but_unread_xyz']
