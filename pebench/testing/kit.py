"""The conformance kit's entry points (:mod:`pebench.testing` re-exports them): the report of an encoding, a task or a
plugin, and :func:`assert_conforms` for a user's own tests."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pebench import encodings, plugins, tasks
from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import ENCODINGS
from pebench.errors import PebenchError, UnknownNameError
from pebench.registry import Registry
from pebench.tasks.base import Task
from pebench.tasks.registry import TASKS
from pebench.testing.encoding import check_encoding_class
from pebench.testing.report import FAIL, PASS, SKIP, Property, Report
from pebench.testing.task import check_task_class

__all__ = ["FAIL", "PASS", "SKIP", "Property", "Report", "assert_conforms", "check", "check_encoding", "check_task"]


def _source(registry: Registry[Any], cls: type) -> str:
    name = getattr(cls, "name", "")
    if name in registry.names() and registry.get(name) is cls:
        return registry.source(name)
    return f"module {cls.__module__}"


def check_encoding(encoding: str | type[PositionalEncoding], options: Mapping[str, Any] | None = None,
                   speed: bool = True) -> Report:  # fmt: skip
    """The report of an encoding (a class or a registered name), built with ``options``; ``speed=False`` leaves out
    the throughput property (the only one that times anything)."""
    cls = encodings.get(encoding) if isinstance(encoding, str) else encoding
    return check_encoding_class(cls, options, _source(ENCODINGS, cls), speed)


def check_task(task: str | type[Task], options: Mapping[str, Any] | None = None) -> Report:
    """The report of a task (a class or a registered name), built with ``options``."""
    cls = tasks.get(task) if isinstance(task, str) else task
    return check_task_class(cls, options, _source(TASKS, cls))


def check(target: str | Path | type, speed: bool = True) -> list[Report]:
    """Reports for ``target``: an encoding or task class; a registered name (its encoding and its task, if both
    exist); or a plugin (a ``.py`` path or a module, :func:`pebench.plugins.load`), for every class it registers."""
    if isinstance(target, type):
        if issubclass(target, PositionalEncoding):
            return [check_encoding(target, speed=speed)]
        if issubclass(target, Task):
            return [check_task(target)]
        raise PebenchError(f"{target.__qualname__} is neither a PositionalEncoding nor a Task subclass")
    spec = str(target)
    in_registry = [(kind, spec) for kind, reg in (("encoding", ENCODINGS), ("task", TASKS)) if spec in reg]
    if in_registry and not spec.endswith(".py"):
        names = in_registry
    elif spec.endswith(".py") or "/" in spec or "." in spec:
        names = [tuple(n.split(" ", 1)) for n in plugins.load(spec).names]
    else:
        raise UnknownNameError("name", spec, [*ENCODINGS.names(), *TASKS.names()])
    return [check_encoding(name, speed=speed) if kind == "encoding" else check_task(name) for kind, name in names]


def assert_conforms(target: str | Path | type, speed: bool = True) -> None:
    """Raise ``AssertionError`` with the report of every class of ``target`` (see :func:`check`) that fails a
    property."""
    failed = [r for r in check(target, speed) if not r.passed]
    if failed:
        raise AssertionError("\n".join(line for r in failed for line in r.lines()))
