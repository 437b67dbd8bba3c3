"""The one registry type: name -> class (encodings, tasks) or object (metrics, findings), with one-line errors for
unknown names."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from pebench.errors import PebenchError, UnknownNameError

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

    def register(self, item: T) -> T:
        """Decorator (or call): register ``item`` under its ``name`` attribute."""
        return self.add(getattr(item, "name", ""), item)

    def names(self) -> list[str]:
        """Every registered name, sorted (names a resolver builds on demand are not listed)."""
        return sorted(self._items)

    def items(self) -> list[T]:
        """Every registered item, in the order of registration."""
        return list(self._items.values())

    def build(self, name: str, *args: Any, options: Mapping[str, Any] | None = None) -> Any:
        """An instance of the class ``name``: ``cls(*args, **options)`` (options are validated by the class)."""
        return self.get(name)(*args, **dict(options or {}))  # type: ignore[operator]

    def describe(self) -> list[tuple[str, str, str]]:
        """(name, one-line description, paper) of every registered item."""
        return [(n, getattr(self.get(n), "description", ""), getattr(self.get(n), "paper", "")) for n in self.names()]

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


def parse_names(raw: str, get: Callable[[str], object], kind: str = "name", valid: Iterable[str] = ()) -> list[str]:
    """The names in a comma-separated list (blanks dropped), each checked with ``get``, which raises
    :class:`UnknownNameError` listing the valid names for an unknown one. A list that names nothing, or names one
    twice (which would run every case twice), is an error too."""
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise PebenchError(f"{raw!r} names no {kind}; valid {kind}s: {', '.join(sorted(valid)) or 'none'}")
    for i, name in enumerate(names):
        if name in names[:i]:
            raise PebenchError(f"{kind} {name!r} is listed twice in {raw!r}; give each {kind} once")
        get(name)
    return names
