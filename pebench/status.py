"""The stored states, as string enums whose values are the strings in the database and JSON (a member compares
equal to its string, so rows written before and after read the same)."""

from __future__ import annotations

from enum import StrEnum


class ResultStatus(StrEnum):
    """A result's (and a training's) status: ``results.status``."""

    OK = "ok"
    DIVERGED = "diverged"
    ERROR = "error"


class RunStatus(StrEnum):
    """A run's status: ``runs.status`` (``interrupted`` also as seen while a ``running`` row's process is gone)."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
