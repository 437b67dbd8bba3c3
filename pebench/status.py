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


class StopReason(StrEnum):
    """Why a training run ended (:attr:`pebench.engine.training.TrainInfo.stop_reason`; the rule is
    :mod:`pebench.engine.stopping`); the value is what a result stores (``metrics["stop_reason"]``) and a checkpoint
    keeps."""

    BUDGET = "budget"
    """It trained to its step budget."""
    LEARNED = "learned"
    """The rule's ``learned`` test was met (:meth:`pebench.engine.stopping.StopRule.check`)."""
    PLATEAU = "plateau"
    """The rule's ``plateau`` test was met (:meth:`pebench.engine.stopping.StopRule.check`)."""
    DIVERGED = "diverged"
    """Its training loss or gradient norm became non-finite."""
