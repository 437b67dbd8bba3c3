"""The tasks' registry (:class:`pebench.registry.Registry`). Each task module registers itself with
:func:`register`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pebench.registry import Registry
from pebench.tasks.base import Task

TASKS: Registry[type[Task]] = Registry("task", checked_names=True)
register = TASKS.register
available = TASKS.names
get = TASKS.get


def build(name: str, options: Mapping[str, Any] | None = None) -> Task:
    """Instantiate task ``name`` with validated ``options``."""
    return TASKS.build(name, options=options)
