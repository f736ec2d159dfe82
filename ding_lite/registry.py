"""Decorator registries: user code plugs policies, models, envs and buffers in by name."""
from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import inspect
import os
import sys
import warnings
from typing import Any, Iterable

PLUGIN_GROUP = 'ding_lite.plugins'
_plugins_loaded = False


def load_plugins() -> None:
    """Import every ``ding_lite.plugins`` entry point once, so third-party packages register themselves."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points
    for entry in entry_points(group=PLUGIN_GROUP):
        entry.load()


# the project's own packages: what they register needs no import_names entry
BUILTIN_PACKAGES = ('ding_lite', 'policy_zoo', 'envs', 'entry', 'dizoo_configs')


def import_names(names: Iterable[str] | None, paths: Iterable[str] = ()) -> None:
    """Import user modules named in a config's ``import_names`` so their decorators run. A module not on
    ``sys.path`` is looked for in the current folder, then in ``paths`` (the folders a run recorded)."""
    for name in names or ():
        try:
            _import(name)
        except ModuleNotFoundError as error:
            if not _is_missing(name, error):  # the module is there; something it imports is not
                raise ImportError(f"cannot import {name!r} listed in import_names: {error}") from error
            _import_from(name, [os.getcwd(), *paths], error)
        except ImportError as error:
            raise ImportError(f"cannot import {name!r} listed in import_names: {error}") from error


def _is_missing(name: str, error: ModuleNotFoundError) -> bool:
    return bool(error.name) and (name == error.name or name.startswith(error.name + '.'))


def _import_from(name: str, folders: list[str], error: ImportError) -> None:
    """Import ``name`` with ``folders`` appended to ``sys.path`` (kept there, as a script's own folder is)."""
    folders = list(dict.fromkeys(os.path.abspath(f) for f in folders))
    added = [f for f in folders if f not in sys.path]
    sys.path.extend(added)
    try:
        _import(name)
    except ModuleNotFoundError as again:
        for folder in added:
            sys.path.remove(folder)
        if not _is_missing(name, again):
            raise ImportError(f"cannot import {name!r} listed in import_names: {again}") from again
        raise ImportError(f"cannot import {name!r} listed in import_names: {error}; looked in sys.path and in "
                          f"{', '.join(folders)}: run from the folder that "
                          f"holds it, or put that folder on PYTHONPATH") from error


def _import(name: str) -> None:
    """``import name``, where a user's script trains at its top level (a pipeline called outside ``if __name__ ==
    '__main__':``) without those statements, so that reloading a run never trains again; the script this process
    runs is not imported a second time (its classes are registered already)."""
    if name in sys.modules or _running_script(name):
        return
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    if not (origin and origin.endswith('.py')):
        importlib.import_module(name)
        return
    with open(origin) as source:
        tree = ast.parse(source.read(), origin)
    training = _training_statements(tree)
    if not training:
        importlib.import_module(name)
        return
    tree.body = [stmt for stmt in tree.body if stmt not in training]
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        exec(compile(tree, origin, 'exec'), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    warnings.warn(f"import_names: {origin} trains at its top level (line {training[0].lineno}); it was imported "
                  f"without that, so nothing trained again: put it under `if __name__ == '__main__':`", stacklevel=3)


def _running_script(name: str) -> bool:
    """``name`` is the script this process runs as ``__main__``."""
    main = getattr(sys.modules.get('__main__'), '__file__', None)
    return bool(main) and os.path.splitext(os.path.basename(main))[0] == name


TRAINERS = ('serial_pipeline', 'serial_pipeline_sqil', 'serial_pipeline_offline', 'parallel_pipeline', 'tune',
            'collect_demo_data')


def _training_statements(tree: ast.Module) -> list[ast.stmt]:
    """A module's top-level statements that would train on import: a call of a pipeline, or of a function of the
    module that calls one, outside the ``__main__`` guard."""
    def calls(node: ast.AST, names: set[str]) -> bool:
        return any(isinstance(n, ast.Call) and (getattr(n.func, 'id', None) or getattr(n.func, 'attr', None)) in names
                   for n in ast.walk(node))
    functions = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    trainers = set(TRAINERS)
    while new := {f.name for f in functions if f.name not in trainers and calls(f, trainers)}:
        trainers |= new
    guard = lambda stmt: isinstance(stmt, ast.If) and '__main__' in ast.unparse(stmt.test)  # noqa: E731
    return [stmt for stmt in tree.body if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and not guard(stmt) and calls(stmt, trainers)]


def defining_module(obj: Any) -> str | None:
    """The module that defines a registered ``obj`` outside the project's own packages, as a fresh process would
    import it (a script's ``__main__`` by its file's name); None for the project's own classes, a config file's
    (re-read with the config) and a notebook's (nothing to import)."""
    module = getattr(obj, '__module__', None) or ''
    if module.split('.')[0] in BUILTIN_PACKAGES or module.startswith('_ding_lite_cfg_'):
        return None
    source = getattr(sys.modules.get(module), '__file__', None)
    if not source or not os.path.isfile(source):  # a notebook's, or a script read from stdin ('<stdin>')
        return None
    return os.path.splitext(os.path.basename(source))[0] if module == '__main__' else module


def module_folder(name: str) -> str | None:
    """The folder to put on ``sys.path`` for ``import name`` to find the imported module ``name`` again."""
    source = getattr(sys.modules.get(name), '__file__', None)
    main = getattr(sys.modules.get('__main__'), '__file__', None)
    if source is None and main and os.path.splitext(os.path.basename(main))[0] == name:  # the script itself
        source = main
    if not source:
        return None
    folder = os.path.dirname(os.path.abspath(source))
    for _ in range(name.count('.') + (os.path.basename(source) == '__init__.py')):
        folder = os.path.dirname(folder)
    return folder


def closest_match(name: str, choices: Iterable[str]) -> str | None:
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, choices: Iterable[str], prefix: str = '') -> str:
    """`` did you mean 'x'?`` for the closest choice (with ``prefix`` prepended), or an empty string."""
    close = closest_match(name, choices)
    return f" did you mean {prefix + close!r}?" if close else ''


def _same_definition(old: Any, new: Any) -> bool:
    """``new`` is ``old`` defined again: the same object, or the same name from the same source file (a module run
    as a script and imported by ``import_names``, or a notebook cell run twice)."""
    if old is new:
        return True
    if getattr(old, '__qualname__', None) != getattr(new, '__qualname__', object()):
        return False
    if getattr(old, '__module__', None) == getattr(new, '__module__', object()):
        return True
    try:
        return inspect.getfile(old) == inspect.getfile(new)
    except TypeError:  # defined where there is no source file (a notebook's __main__)
        return False


class Registry:
    """A name -> class (or function) table filled by ``@REGISTRY.register(name)``.

    ``kind`` only names the entries in error messages; ``Registry()`` works as DI-engine's does.
    """

    def __init__(self, kind: str = 'entry', builtin_module: str | None = None) -> None:
        self.kind = kind
        self._builtin_module = builtin_module  # imported on the first miss, so built-ins need no import by hand
        self._table: dict[str, Any] = {}

    def register(self, name: str, obj: Any = None, force_overwrite: bool = False) -> Any:
        """Register ``obj`` under ``name``; without ``obj``, return a decorator."""
        if obj is None:
            return lambda target: self.register(name, target, force_overwrite)
        if name in self._table and not force_overwrite and not _same_definition(self._table[name], obj):
            raise KeyError(
                f"{self.kind} {name!r} is already registered ({self._table[name]!r}); "
                f"pass force_overwrite=True to replace it"
            )
        self._table[name] = obj
        return obj

    def get(self, name: str) -> Any:
        if name not in self._table:
            self.load_builtins()
        if name not in self._table:
            keys = ', '.join(self.keys()) or '(none)'
            raise KeyError(f"unknown {self.kind} {name!r};{did_you_mean(name, self._table)} registered: {keys}. "
                           f"One registered in your own module needs that module in create_config's import_names")
        return self._table[name]

    def load_builtins(self) -> None:
        """Import the module that registers this registry's built-in entries, and the entry-point plugins."""
        if self._builtin_module:
            importlib.import_module(self._builtin_module)
        load_plugins()

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.get(name)(*args, **kwargs)

    def keys(self) -> list[str]:
        self.load_builtins()
        return sorted(self._table)

    def query(self) -> list[str]:
        """The registered names (DI-engine's name for ``keys``)."""
        return self.keys()

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        if name not in self._table:
            self.load_builtins()
        return name in self._table

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.keys()})"


POLICY_REGISTRY = Registry('policy', 'policy_zoo')
MODEL_REGISTRY = Registry('model', 'ding_lite.model')
ENV_REGISTRY = Registry('env', 'envs')
ENV_MANAGER_REGISTRY = Registry('env_manager', 'envs')
BUFFER_REGISTRY = Registry('buffer', 'ding_lite.data')
WRAPPER_REGISTRY = Registry('wrapper', 'ding_lite.model')
SERIAL_COLLECTOR_REGISTRY = Registry('serial_collector', 'ding_lite.worker')
SERIAL_EVALUATOR_REGISTRY = Registry('serial_evaluator', 'ding_lite.worker')
LEARNER_REGISTRY = Registry('learner', 'ding_lite.worker')
REWARD_MODEL_REGISTRY = Registry('reward_model', 'ding_lite.reward_model')  # policy.reward_signals' models

__all__ = [
    'Registry', 'POLICY_REGISTRY', 'MODEL_REGISTRY', 'ENV_REGISTRY', 'ENV_MANAGER_REGISTRY', 'BUFFER_REGISTRY',
    'WRAPPER_REGISTRY', 'SERIAL_COLLECTOR_REGISTRY', 'SERIAL_EVALUATOR_REGISTRY', 'LEARNER_REGISTRY', 'import_names',
    'load_plugins', 'did_you_mean', 'defining_module', 'module_folder',
]
