"""Name -> task class registry. Each task module registers itself with :func:`register`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pebench.registry import Registry
from pebench.tasks.base import Task

TASKS: Registry[type[Task]] = Registry("task")


def register(cls: type[Task]) -> type[Task]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    return TASKS.add(cls.name, cls)


def available() -> list[str]:
    """Names of every registered task, sorted."""
    return TASKS.names()


def get(name: str) -> type[Task]:
    """The class registered under ``name``; an unknown name raises an error listing the valid ones."""
    return TASKS.get(name)


def build(name: str, options: Mapping[str, Any] | None = None) -> Task:
    """Instantiate task ``name`` with validated ``options``."""
    return get(name)(**dict(options or {}))
