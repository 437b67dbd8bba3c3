"""The encodings' registry (:class:`pebench.registry.Registry`). Each encoding module registers itself with
:func:`register`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pebench.encodings.base import EncodingContext, PositionalEncoding, Wrapper
from pebench.registry import Registry

ENCODINGS: Registry[type[PositionalEncoding]] = Registry("encoding")
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


def not_applicable(encoding: str, task: Any) -> str | None:
    """Why encoding ``encoding`` cannot run on ``task`` (a :class:`~pebench.tasks.base.Task` or its class), as one
    line: it needs annotations (:attr:`~pebench.encodings.base.PositionalEncoding.needs`) the task's batches do not
    carry (:attr:`~pebench.tasks.base.Task.annotations`). None when it can."""
    missing = sorted(get(encoding).needs - frozenset(task.annotations))
    if not missing:
        return None
    return f"{encoding} needs {' and '.join(missing)} annotations, which task {task.name} does not provide"
