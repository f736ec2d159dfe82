from __future__ import annotations

import ast
import pathlib

import ding_lite

FORBIDDEN = ('policy_zoo', 'envs', 'entry', 'dizoo_configs')


def _module_level_imports(tree: ast.Module):
    for node in tree.body:  # only module level: lazy imports inside functions are allowed
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_core_does_not_import_upper_layers():
    root = pathlib.Path(ding_lite.__file__).parent
    offenders = []
    for path in root.rglob('*.py'):
        for name in _module_level_imports(ast.parse(path.read_text())):
            if name.split('.')[0] in FORBIDDEN:
                offenders.append(f"{path.relative_to(root)}: {name}")
    assert offenders == []


def test_lazy_reexports():
    from ding_lite import POLICY_REGISTRY, ReplayBuffer, SACPolicy, compile_config, model_wrap, serial_pipeline
    from ding_lite.config import compile_config as direct
    from entry import serial_pipeline as entry_pipeline
    assert compile_config is direct and callable(model_wrap) and serial_pipeline is entry_pipeline
    assert SACPolicy.__name__ == 'SACPolicy'
    assert POLICY_REGISTRY.kind == 'policy' and ReplayBuffer.__name__ == 'ReplayBuffer'
    import pytest
    with pytest.raises(AttributeError, match='no_such_name'):
        ding_lite.no_such_name
