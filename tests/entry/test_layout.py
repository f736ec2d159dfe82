"""entry/ laid out by what it does: no circle between its files (lazy imports inside functions count too), no module
named ``utils``, and each file says on its first line what it holds."""
from __future__ import annotations

import ast
import importlib
import pathlib
import sys

import pytest

from tests.conftest import ROOT

ENTRY = pathlib.Path(ROOT) / 'entry'


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _imports(path: pathlib.Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports, at any depth of its code, relative imports resolved."""
    package = _module(path) if path.name == '__init__.py' else _module(path).rpartition('.')[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split('.')[:len(package.split('.')) - node.level + 1] if node.level else []
            module = '.'.join(base + ([node.module] if node.module else []))
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def _graph() -> dict[str, set[str]]:
    files = {_module(path): path for path in ENTRY.rglob('*.py')}
    return {module: _imports(path, set(files)) - {module} for module, path in files.items()}


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (a list of modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_circle_between_entry_files():
    graph = _graph()
    assert graph['entry.pipeline.serial'] >= {'entry.pipeline.single', 'entry.pipeline.seeds'}  # the graph is read
    assert _circle(graph) is None, ' -> '.join(_circle(graph))
    assert _circle({**graph, 'entry.kit.steps': graph['entry.kit.steps'] | {'entry.pipeline.seeds'}})


def test_no_utils_module_and_every_file_says_what_it_holds():
    assert not [p for p in ENTRY.rglob('utils.py')]
    silent = [str(p.relative_to(ROOT)) for p in ENTRY.rglob('*.py') if not p.read_text().startswith('"""')]
    assert silent == []


def test_di_engine_module_paths_import_as_di_engine_writes_them():
    """``ding.entry.serial_entry_sqil`` and its siblings, as DI-engine's tests and users' scripts import them: plain
    modules handing on the very functions the package exports (no import hook)."""
    import entry
    from entry.serial_entry import serial_pipeline
    from entry.serial_entry_sqil import serial_pipeline_sqil
    from entry.serial_entry_offline import serial_pipeline_offline
    from entry.application_entry import collect_demo_data, eval as evaluate
    from entry.parallel_entry import parallel_pipeline
    assert (serial_pipeline, serial_pipeline_sqil, serial_pipeline_offline, collect_demo_data, evaluate,
            parallel_pipeline) == (entry.serial_pipeline, entry.serial_pipeline_sqil, entry.serial_pipeline_offline,
                                   entry.collect_demo_data, entry.eval, entry.parallel_pipeline)
    assert not [finder for finder in sys.meta_path if type(finder).__module__.startswith('entry')]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module('entry.serial_entry_onpolicy')  # DI-engine's on-policy entry: not here


def test_the_core_tests_import_nothing_of_entry():
    """Tests live where the code they test lives: a test of ding_lite, envs or policy_zoo that runs a pipeline
    belongs under tests/entry/ (``tests/entry/pipeline/test_<feature>_runs.py``)."""
    offenders = []
    for room in ('ding_lite', 'envs', 'policy_zoo'):
        for path in (pathlib.Path(ROOT) / 'tests' / room).rglob('*.py'):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ''] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
                offenders += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split('.')[0] == 'entry']
    assert offenders == []
