"""Per-class default configs and the deep merge every layer uses (a leaf: imports nothing else of ding_lite)."""
from __future__ import annotations

import ast
import copy
import functools
import inspect
import io
import sys
import textwrap
import tokenize
from collections.abc import Mapping
from typing import Any, Callable, Iterator

from easydict import EasyDict


class ConfigError(ValueError):
    """A config key or value that the framework cannot accept."""


class ConfigWarning(UserWarning):
    """A config that runs, but not quite as written (an ignored DI-engine key, a fallback)."""


def deep_merge(base: dict, update: dict) -> EasyDict:
    """A copy of ``base`` with ``update`` merged in, recursing into dicts present in both."""
    out = EasyDict(copy.deepcopy(dict(base)))
    for key, value in update.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) \
            else copy.deepcopy(value)
    return out


def class_default_config(cls: type) -> EasyDict:
    """The ``config`` class attributes along ``cls``'s MRO, deep-merged so subclasses override their parents."""
    merged = EasyDict()
    for klass in reversed(cls.__mro__):
        if 'config' in vars(klass):
            merged = deep_merge(merged, klass.config)
    return merged


def with_defaults(cls: type, cfg: dict | None) -> EasyDict:
    """``cfg`` deep-merged over ``cls.default_config()``: a partial sub-config keeps the defaults it leaves out."""
    return deep_merge(cls.default_config(), cfg or {})


def config_docs(cls: type) -> dict[str, str]:
    """``{dotted key: description}`` for ``cls``'s default config, read from where the keys are declared: the
    comments beside the keys of the ``config = dict(...)`` literals along its MRO (a subclass's wins), or for a
    class configured by its constructor (models), beside its ``__init__`` parameters. A key's comment is the one
    at the end of its line, else the comment lines just above it."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if 'config' in vars(klass) or '__init__' in vars(klass):
            docs.update(_declared_comments(klass))
    return docs


class LazyDocs(Mapping):
    """``{dotted key: description}`` built on first use (reading the classes' sources costs ~0.4 s a process, and
    only an error's did-you-mean or ``ding_lite config`` prints them)."""

    def __init__(self, build: Callable[[], dict[str, str]]) -> None:
        self._build, self._docs = build, None

    def _all(self) -> dict[str, str]:
        if self._docs is None:
            self._docs = self._build()
        return self._docs

    def __getitem__(self, key: str) -> str:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def docs_of(cls: type, prefix: str = '') -> LazyDocs:
    """``config_docs(cls)`` with each key under ``prefix``, read when first asked."""
    return LazyDocs(lambda: {f"{prefix}{key}": text for key, text in config_docs(cls).items()})


@functools.lru_cache(maxsize=None)  # a class's source is read and parsed once a process (each config compile asks)
def _declared_comments(klass: type) -> dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):  # built in, or defined where there is no source
        return {}
    comment = _comments(source)
    shared = _module_dicts(klass.__module__)
    docs: dict[str, str] = {}
    body = ast.parse(source).body[0].body
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if any(getattr(t, 'id', None) == 'config' for t in targets) and node.value is not None:
            _literal_docs(node.value, '', comment, docs, shared)
        elif isinstance(node, ast.FunctionDef) and node.name == '__init__' and 'config' not in vars(klass):
            for arg in node.args.args[1:] + node.args.kwonlyargs:
                if comment(arg.lineno):
                    docs[arg.arg] = comment(arg.lineno)
    return docs


def _comments(source: str) -> Callable[[int], str | None]:
    """The comment of a key on line ``lineno`` of ``source``: at the end of its line, else the lines just above."""
    lines = source.splitlines()
    comments = {tok.start[0]: tok.string.lstrip('#').strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}

    def comment(lineno: int) -> str | None:
        if lineno in comments and lines[lineno - 1].lstrip()[:1] != '#':
            return comments[lineno]
        above = []
        while lineno - 1 - len(above) > 0 and lines[lineno - 2 - len(above)].lstrip().startswith('#'):
            above.insert(0, comments[lineno - 1 - len(above)])
        return ' '.join(above) or None
    return comment


@functools.lru_cache(maxsize=None)
def _module_dicts(module: str) -> dict[str, tuple[ast.AST, Any]]:
    """The module's top-level ``NAME = dict(...)`` literals (settings several classes declare alike), each with the
    comment reader of its source."""
    try:
        source = inspect.getsource(sys.modules[module])
    except (KeyError, OSError, TypeError):
        return {}
    comment = _comments(source)
    return {node.targets[0].id: (node.value, comment) for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}


def _literal_docs(node: ast.AST, prefix: str, comment: Any, docs: dict[str, str],
                  shared: dict[str, tuple[ast.AST, Any]]) -> None:
    """Walk a ``dict(key=...)`` call or ``{'key': ...}`` literal, recording each key's comment (through a module's
    shared literal where a value, or a ``**`` entry, names one)."""
    if isinstance(node, ast.Name) and node.id in shared:
        _literal_docs(shared[node.id][0], prefix, shared[node.id][1], docs, {})
        return
    if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'dict':
        for kw in node.keywords:
            if kw.arg is None:  # **NAME
                _literal_docs(kw.value, prefix, comment, docs, shared)
        items = [(kw.arg, kw.value, kw.lineno) for kw in node.keywords if kw.arg]
    elif isinstance(node, ast.Dict):
        items = [(k.value, v, k.lineno) for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)]
    else:
        return
    for key, value, lineno in items:
        text = comment(lineno)
        if text:
            docs[prefix + key] = text
        _literal_docs(value, f"{prefix}{key}.", comment, docs, shared)


__all__ = ['ConfigError', 'ConfigWarning', 'deep_merge', 'class_default_config', 'with_defaults', 'config_docs',
           'LazyDocs', 'docs_of']
