"""``--lr-sweep --lr-halving``: the learning-rate sweep at about two models' cost instead of one per rate.

Successive halving with one rung (after Jamieson & Talwalkar 2016, "Non-stochastic best arm identification and
hyperparameter optimization"; Li et al. 2018, Hyperband): every rate of a cell (encoding, task, seed) is first trained
for ``ceil(B / k)`` steps, B the cell's budget and k the number of rates (each short run on its own schedule, warm-up
and cosine decay over its own steps); the rate whose short run has the best final validation at the training length
(the learning curve's last ``val_<metric>_1x``, in the metric's direction, a tie to the lower rate) is trained to the
full budget from the start -- the same model a run at that one rate trains -- and the other rates keep their short
runs. Cost: k x B / k + B = 2B steps of training per cell, against k x B for the full sweep (0.67 of it with three
rates, 0.5 with four).

Every rate's result is stored: the chosen one as usual with ``metrics["lr_halving"] = "chosen"``, the others as
results of their short runs (their configuration records the short step count, so they are never mixed with full
runs) with the reason. The page reports each cell at its chosen rate (:func:`pebench.analysis.lr.chosen`). The
choice can differ from the full sweep's (a rate can validate better early and worse at the end); the cost and the
agreement are measured in docs/sweeps.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from pebench.analysis.lr import rate_at
from pebench.case import Case, Point
from pebench.engine.cache import Timer
from pebench.engine.identity import identity_record, partial_config
from pebench.engine.runner import Runner, record_failure
from pebench.errors import PebenchError
from pebench.records.record import ResultRecord

CHOSEN = "chosen"


class Halving:
    """Runs the suite's cases with ``--lr-halving``: a case at one of ``points`` (the ``lrV`` points of
    ``--lr-sweep``, sorted lowest rate first) gets its cell's chosen rate's full run or its own short run, marked as
    such; any other case runs as ``runner`` runs it."""

    def __init__(self, runner: Runner, points: Sequence[Point]) -> None:
        self.runner = runner
        self.points = sorted(points, key=lambda p: rate_at(p) or 0.0)
        self._short: dict[tuple[Point, str], Runner] = {}
        self._winner: dict[tuple[str, str, int], Point] = {}

    def budget(self, point: Point, task: str) -> tuple[int, int]:
        """(the full budget, the short run's steps) of ``task`` at ``point``."""
        steps = self.runner.models(point).settings.train_config(self.runner.task(task, point)).steps
        return steps, max(1, math.ceil(steps / len(self.points)))

    def short(self, point: Point, task: str) -> Runner:
        """The runner of the short runs of ``task`` at ``point``: the point's settings with the short step count."""
        if (point, task) not in self._short:
            settings = replace(self.runner.models(point).settings, steps=self.budget(point, task)[1])
            self._short[(point, task)] = Runner(settings, self.runner.progress_context, self.runner.reuse)
        return self._short[(point, task)]

    def winner(self, case: Case) -> Point:
        """The rate point chosen for ``case``'s cell (its short runs trained once, here or from checkpoints)."""
        key = (case.encoding, case.task, case.seed)
        if key not in self._winner:
            task = self.runner.task(case.task)
            scored = []
            for point in self.points:
                runner = self.short(point, case.task)
                at = replace(case, length=task.train_length, point=point)
                info = runner.models(point).model_for(at, runner.describe(at)).info
                values = [p[f"val_{task.metric}_1x"] for p in info.curve if f"val_{task.metric}_1x" in p]
                value = values[-1] if values and math.isfinite(values[-1]) else None
                scored.append((value, point))
            valid = [(v, p) for v, p in scored if v is not None]
            sign = 1.0 if task.higher_is_better else -1.0
            # the best validation; a tie (or none validated) goes to the lowest rate
            self._winner[key] = max(valid, key=lambda vp: sign * vp[0])[1] if valid else self.points[0]
        return self._winner[key]

    def run(self, case: Case, timer: Timer | None = None) -> ResultRecord:
        """``case``'s record: at the chosen rate its full run (through ``timer``), at another rate its short run,
        each with ``metrics["lr_halving"]`` saying which; a case at no rate point, ``runner``'s."""
        if case.point not in self.points:
            return self.runner.run(case, timer)
        try:
            best = self.winner(case)
        except PebenchError:
            raise
        except Exception as err:  # a failure of the case's own code in a short run is its result, as in Runner.run
            return self._failed(case, err)
        if case.point == best:
            record = self.runner.run(case, timer)
            record.metrics["lr_halving"] = CHOSEN
            return record
        budget, steps = self.budget(case.point, case.task)
        record = self.short(case.point, case.task).run(case)
        record.metrics["lr_halving"] = f"short run of {steps} of {budget} steps: {best} validated better"
        return record

    def _failed(self, case: Case, err: Exception) -> ResultRecord:
        """``case``'s record failed by ``err``, raised while its cell's short runs trained
        (:func:`pebench.engine.runner.record_failure`), with what identity can be built without the probe."""
        models = self.runner.models(case.point)
        task = models.task(case.task)
        try:
            record = identity_record(models.settings, task, case)
        except Exception:  # the configuration itself cannot be built: what can be said of it
            record = identity_record(models.settings, task, case, partial_config(task, case))
        return record_failure(record, "in the learning-rate halving's short runs", err)
