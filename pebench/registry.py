"""The one registry type: name -> class (encodings, tasks) or object (metrics, findings), with one-line errors for
unknown names.

Every entry remembers where it came from (:meth:`Registry.source`): ``built-in`` for pebench's own modules, else the
label of the plugin being imported when it registered (:func:`loading`, set by :mod:`pebench.plugins`), else the
module that defined it. Two entries of one name from different sources are a one-line
:class:`~pebench.errors.NameClashError` naming both."""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from pebench.errors import InvalidNameError, NameClashError, PebenchError, UnknownNameError

T = TypeVar("T")

BUILT_IN = "built-in"
"""The source of everything defined in pebench's own modules."""

_LOADING: list[str] = []

NAME_RULE = "a lower-case Python identifier (letters, digits and _, not starting with a digit, not a keyword)"
"""What an encoding's or a task's name must be: it is a suite parameter, part of case ids, file names in the cache
directory and the page's ids (``pebench new`` writes ``NAME.py`` by the same rule)."""
_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def valid_name(name: str) -> bool:
    """Whether ``name`` follows :data:`NAME_RULE`."""
    return bool(_NAME.fullmatch(name)) and not keyword.iskeyword(name)


@contextmanager
def loading(source: str) -> Iterator[None]:
    """Registrations made inside (while a plugin is imported) come from ``source``, e.g. ``plugin /x/my_pe.py``;
    pebench's own classes stay ``built-in`` wherever they are imported."""
    _LOADING.append(source)
    try:
        yield
    finally:
        _LOADING.pop()


def _module(item: Any) -> str:
    return str(getattr(item, "__module__", "") or "")


def source_of(item: Any) -> str:
    """Where ``item`` comes from: ``built-in``, the plugin being loaded (:func:`loading`), or ``module NAME``."""
    module = _module(item)
    if module == "pebench" or module.startswith("pebench."):
        return BUILT_IN
    return _LOADING[-1] if _LOADING else f"module {module}"


def _identity(item: Any) -> Any:
    """The same class imported again (a module reloaded) has the same identity; distinct classes never do."""
    qualname = getattr(item, "__qualname__", None)
    return (_module(item), qualname) if isinstance(qualname, str) else id(item)


class Registry(Generic[T]):
    """Maps names to classes (or factories). Unknown names raise :class:`UnknownNameError` listing valid names."""

    def __init__(self, kind: str, checked_names: bool = False) -> None:
        self.kind = kind
        self.checked_names = checked_names
        """Whether a name must follow :data:`NAME_RULE` (encodings and tasks)."""
        self._items: dict[str, T] = {}
        self._sources: dict[str, str] = {}
        self._resolvers: list[Callable[[str], T | None]] = []

    def add(self, name: str, item: T, source: str | None = None) -> T:
        """Register ``item`` as ``name`` from ``source`` (default :func:`source_of`). The same class imported again
        replaces itself; another item of the name is a :class:`~pebench.errors.NameClashError` naming both
        sources."""
        if not name:
            raise ValueError(f"a {self.kind} needs a name")
        source = source or source_of(item)
        if self.checked_names and not valid_name(name):
            raise InvalidNameError(f"{self.kind} {name!r} from {self._describe(source, item)}: its name must be "
                                 f"{NAME_RULE}, e.g. my_pe; rename it (its name attribute)")  # fmt: skip
        old = self._items.get(name)
        if old is not None and old is not item and _identity(old) != _identity(item):
            raise NameClashError(
                f"{self.kind} {name!r} from {self._describe(source, item)} clashes with the {self.kind} {name!r} from "
                f"{self._describe(self._sources[name], old)}; rename one of them (its name attribute)"
            )
        self._items[name] = item
        self._sources.setdefault(name, source)
        return item

    @staticmethod
    def _describe(source: str, item: Any) -> str:
        return f"{source} {_module(item)}" if source == BUILT_IN else source

    def source(self, name: str) -> str:
        """Where ``name`` comes from (:func:`source_of`); a name a resolver builds (e.g. ``randomized_<X>``) is
        built-in."""
        if name in self._sources:
            return self._sources[name]
        self.get(name)  # an unknown name is a one-line error
        return BUILT_IN

    @contextmanager
    def isolated(self) -> Iterator[None]:
        """Registrations made inside are undone at exit (checking a plugin file, tests)."""
        items, sources = dict(self._items), dict(self._sources)
        try:
            yield
        finally:
            self._items, self._sources = items, sources

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
