"""Stop when learned: when a training run may end before its step budget (``--stop``).

:class:`StopRule` is read by the training loop (:func:`pebench.engine.training.train`, and per seed by
:func:`pebench.engine.packing.train_packed`) at learning-curve points only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pebench.errors import ConfigError
from pebench.status import StopReason  # stored in a result's metrics: a stored state

__all__ = ["STOP_REASONS", "STOP_RULES", "StopReason", "StopRule", "StopRuleName"]


class StopRuleName(StrEnum):
    """When training ends (:attr:`StopRule.rule`, ``--stop``); the value is what the configuration stores."""

    BUDGET = "budget"
    """After the task's step count."""
    LEARNED = "learned"
    """As soon as the model has learned its task, else at the budget."""
    PLATEAU = "plateau"
    """As ``learned``, and also when the training loss has stopped falling in the second half of the budget."""


STOP_RULES: tuple[str, ...] = tuple(rule.value for rule in StopRuleName)
"""The values of :class:`StopRuleName` (``budget``, ``learned``, ``plateau``): ``--stop``'s choices."""

STOP_REASONS: tuple[str, ...] = tuple(reason.value for reason in StopReason)
"""The values of :class:`StopReason` (``budget``, ``learned``, ``plateau``, ``diverged``)."""


@dataclass(frozen=True)
class StopRule:
    """Stop when learned: a rule read at learning-curve points only, on the values the loop already reads there (the
    training loss and token accuracy of the steps since the last point, summed on the device), so a step has no host
    sync of its own and the data stream, schedule and weights up to the stop are those of a budget run.

    * **learned** -- the training token accuracy of each of the last ``window`` curve points is at least
      ``accuracy``: with the default 20 points per run, the model has answered 99% of the scored tokens right over
      the last 15% of the budget (3 x 5% of the steps, each point averaging all its steps' batches).
    * **plateau** (rule ``plateau`` only) -- past ``min_fraction`` of the budget, the mean training loss of the
      last ``window`` points is not ``plateau_drop`` (relative) below that of the ``window`` points before: the loss
      has stopped falling. Off in ``learned``: late phase changes (an induction head forming after a long flat
      stretch) are a known pattern of these tasks, so a flat loss is weaker evidence than a learned task.

    The step budget stays the task's (the learning-rate schedule is that of the budget); a model that never meets a
    rule trains to it. The rule and its thresholds are part of the stored configuration (:meth:`to_dict`), so results
    of different rules never share a configuration hash, a checkpoint or a reuse."""

    rule: StopRuleName = StopRuleName.BUDGET
    """One of :class:`StopRuleName`; given as its value (``"learned"``) it is converted to the member."""
    accuracy: float = 0.99
    window: int = 3
    plateau_drop: float = 0.01
    min_fraction: float = 0.5

    def __post_init__(self) -> None:
        if self.rule not in STOP_RULES:
            raise ConfigError("train", f"{{stop}} must be one of {', '.join(STOP_RULES)}, got {self.rule!r}")
        object.__setattr__(self, "rule", StopRuleName(self.rule))

    def to_dict(self) -> dict[str, Any] | None:
        """The rule as stored in the configuration; None for ``budget`` (so a budget run's configuration, hash and
        checkpoints are those from before the rule existed)."""
        if self.rule == StopRuleName.BUDGET:
            return None
        d: dict[str, Any] = {"rule": self.rule.value, "accuracy": self.accuracy, "window": self.window}
        if self.rule == StopRuleName.PLATEAU:
            d |= {"plateau_drop": self.plateau_drop, "min_fraction": self.min_fraction}
        return d

    def check(self, curve: list[dict[str, float]], steps_done: int, budget: int) -> StopReason | None:
        """Why to stop after the curve point just appended to ``curve`` (:attr:`StopReason.LEARNED` /
        :attr:`StopReason.PLATEAU`), or None."""
        if self.rule == StopRuleName.BUDGET or steps_done >= budget:
            return None
        w = self.window
        last = curve[-w:]
        if len(last) == w and all(p["accuracy"] >= self.accuracy for p in last):
            return StopReason.LEARNED
        if self.rule == StopRuleName.PLATEAU and steps_done >= self.min_fraction * budget and len(curve) >= 2 * w:
            before = sum(p["loss"] for p in curve[-2 * w : -w]) / w
            now = sum(p["loss"] for p in last) / w
            if math.isfinite(now) and now > before * (1.0 - self.plateau_drop):
                return StopReason.PLATEAU
        return None
