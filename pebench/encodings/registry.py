"""The encodings' registry (:class:`pebench.registry.Registry`). Each encoding module registers itself with
:func:`register`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pebench.encodings.base import EncodingContext, PositionalEncoding, Wrapper
from pebench.registry import Registry

ENCODINGS: Registry[type[PositionalEncoding]] = Registry("encoding", checked_names=True)
register = ENCODINGS.register
available = ENCODINGS.names
get = ENCODINGS.get
describe = ENCODINGS.describe


def build(name: str, ctx: EncodingContext, options: Mapping[str, Any] | None = None) -> PositionalEncoding:
    """Instantiate encoding ``name`` for a model described by ``ctx`` with validated ``options``."""
    return ENCODINGS.build(name, ctx, options=options)


def wrappable() -> tuple[str, ...]:
    """Registered encodings a :class:`~pebench.encodings.base.Wrapper` may wrap: position-indexed, not wrappers,
    needing no task annotations."""
    return tuple(n for n in available()
                 if get(n).position_indexed and not issubclass(get(n), Wrapper) and not get(n).needs)  # fmt: skip


def wrapper_family(prefix: str, wrapper: type[Wrapper], options: Mapping[str, Any], registered: Sequence[str],
                   bases: Callable[[], Sequence[str]], attrs: Callable[[type[PositionalEncoding]], dict[str, Any]]
                   ) -> Callable[[str], type[PositionalEncoding]]:  # fmt: skip
    """The classes ``<prefix><X>``: ``wrapper`` around the inner encoding X (class attribute ``inner_cls``), with X's
    options plus ``options`` and the class attributes ``attrs(X's class)``; each made once, then reused. Any X of
    ``bases()`` resolves by name; the ``registered`` ones are in the registry (the suite's parameters). Returns the
    class maker (``randomized_<X>``, ``ssmax_<X>``)."""
    classes: dict[str, type[PositionalEncoding]] = {}

    def make(inner_name: str) -> type[PositionalEncoding]:
        if inner_name not in classes:
            inner_cls = ENCODINGS.get(inner_name)
            clash = sorted(set(options) & set(inner_cls.options))
            if clash:
                raise ValueError(f"encoding {inner_name} has an option named {clash[0]!r}, which {prefix} uses")
            classes[inner_name] = type(f"{wrapper.__name__}_{inner_name}", (wrapper,), {
                "name": prefix + inner_name, "inner_cls": inner_cls, "options": {**inner_cls.options, **options},
                "__module__": wrapper.__module__, **attrs(inner_cls)})  # fmt: skip
        return classes[inner_name]

    def resolve(name: str) -> type[PositionalEncoding] | None:
        inner = name.removeprefix(prefix)
        return make(inner) if name.startswith(prefix) and inner in bases() else None

    ENCODINGS.add_resolver(resolve)
    for name in registered:
        ENCODINGS.add(prefix + name, make(name))
    return make


def not_applicable(encoding: str, task: Any) -> str | None:
    """Why encoding ``encoding`` cannot run on ``task`` (a :class:`~pebench.tasks.base.Task` or its class), as one
    line: it needs annotations (:attr:`~pebench.encodings.base.PositionalEncoding.needs`) the task's batches do not
    carry (:attr:`~pebench.tasks.base.Task.annotations`). None when it can."""
    missing = sorted(get(encoding).needs - frozenset(task.annotations))
    if not missing:
        return None
    return f"{encoding} needs {' and '.join(missing)} annotations, which task {task.name} does not provide"
