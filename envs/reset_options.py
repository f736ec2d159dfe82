"""Reset options that remember which of their keys the env read: an environment parameter given through
``reset(options=...)`` that the env never reads (a typo) is refused by name, as ``gymnasium.make`` refuses an unknown
keyword."""
from __future__ import annotations

from typing import Any, Iterator


class ReadOptions(dict):
    """A dict of reset options whose reads (a key looked up or tested, the whole dict iterated or copied) it notes."""

    def __init__(self, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.read: set[str] = set()

    def unread(self) -> list[str]:
        """The keys no one has read yet."""
        return sorted(set(dict.keys(self)) - self.read)

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(key)
        return super().__contains__(key)

    def pop(self, key: str, *default: Any) -> Any:
        self.read.add(key)
        return super().pop(key, *default)

    def _all(self) -> None:
        self.read.update(dict.keys(self))

    def __iter__(self) -> Iterator[str]:
        self._all()
        return super().__iter__()

    def keys(self) -> Any:
        self._all()
        return super().keys()

    def items(self) -> Any:
        self._all()
        return super().items()

    def values(self) -> Any:
        self._all()
        return super().values()

    def copy(self) -> dict[str, Any]:
        self._all()
        return dict(super().items())
