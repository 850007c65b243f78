"""One registry mechanism for every kind of named plugin: policies, stores, retrievers,
extractors (and, next, importers).

A name registered twice is an error, so a plugin cannot silently replace a built-in one.
Entries iterate by their declared order, then by name: the report's row order never
depends on which module happened to be imported first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Name -> entry for one kind of plugin, iterated in declared order."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, tuple[float, T]] = {}

    def add(self, name: str, entry: T, *, order: float = 0) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._entries[name] = (order, entry)
        return entry

    def register(self, name: str, *, order: float = 0) -> Callable[[T], T]:
        """Decorator form of add()."""
        return lambda entry: self.add(name, entry, order=order)

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name][1]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(self)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries, key=lambda name: (self._entries[name][0], name)))

    def __len__(self) -> int:
        return len(self._entries)
