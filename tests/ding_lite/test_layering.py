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
