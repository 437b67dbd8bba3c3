"""A small name -> class registry shared by encodings and tasks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from pebench.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to classes (or factories). Unknown names raise :class:`UnknownNameError` listing valid names."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._resolvers: list[Callable[[str], T | None]] = []

    def add(self, name: str, item: T) -> T:
        if not name:
            raise ValueError(f"a {self.kind} needs a name")
        if name in self._items and self._items[name] is not item:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = item
        return item

    def add_resolver(self, resolver: Callable[[str], T | None]) -> None:
        """A fallback that builds an item for names not registered directly (e.g. wrapper prefixes)."""
        self._resolvers.append(resolver)

    def names(self) -> list[str]:
        return sorted(self._items)

    def get(self, name: str) -> T:
        if name in self._items:
            return self._items[name]
        for resolver in self._resolvers:
            item = resolver(name)
            if item is not None:
                return item
        raise UnknownNameError(self.kind, name, self._items)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self.get(name)
        except UnknownNameError:
            return False
        return True


def parse_names(raw: str, get: Callable[[str], object]) -> list[str]:
    """The names in a comma-separated list (blanks dropped), each checked with ``get``, which raises
    :class:`UnknownNameError` listing the valid names for an unknown one."""
    names = [n.strip() for n in raw.split(",") if n.strip()]
    for name in names:
        get(name)
    return names
