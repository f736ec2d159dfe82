"""entry/ laid out by what it does: no circle between its files (lazy imports inside functions count too), no module
named ``utils``, and each file says on its first line what it holds."""
from __future__ import annotations

import ast
import pathlib

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
    assert _circle({**graph, 'entry.pipeline.steps': graph['entry.pipeline.steps'] | {'entry.pipeline.seeds'}})


def test_no_utils_module_and_every_file_says_what_it_holds():
    assert not [p for p in ENTRY.rglob('utils.py')]
    silent = [str(p.relative_to(ROOT)) for p in ENTRY.rglob('*.py') if not p.read_text().startswith('"""')]
    assert silent == []
