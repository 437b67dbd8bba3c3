"""``--seeds``: a fixed number of seeds, or ``auto[:N]``, seeds only where they decide.

With ``--seeds auto:N`` (``auto``: N = :data:`AUTO_MAX`) the suite collects seeds 0 .. N-1 of every case, seed-major
(every seed-0 case first, then every seed-1 case, ...), and runs them in one process in that order. Seed 0 always
runs; before the first case of seed k of a task, :class:`AdaptiveSeeds` asks :func:`pebench.analysis.seeds.undecided`
which cells of the task are still open after seeds 0 .. k-1 (this session's results of the task, trained or reused),
and a cell's seed-k cases run only when the cell is open and ran seed k-1; the others are skipped with the reason
("decided after k seeds"). A seed that runs carries why in its record (``metrics["seed_reason"]``), which the report
shows. The answer depends only on the results of lower seeds, so the same database and options give the same
seeds; because it needs every lower seed of the task first, ``auto`` runs sequentially (no ``-n``, ``--shard`` or
``--executor ray``) and never packs seeds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pebench import metrics
from pebench.analysis import noise, scoring
from pebench.analysis.seeds import undecided
from pebench.case import Case
from pebench.errors import PebenchError
from pebench.records.record import ResultRecord

AUTO_MAX = 5
"""Most seeds of a cell with plain ``--seeds auto``."""


@dataclass(frozen=True)
class SeedPlan:
    """How many seeds a run collects (``count``) and whether they are added only where undecided (``auto``)."""

    count: int = 1
    auto: bool = False

    @classmethod
    def parse(cls, text: str | int) -> SeedPlan:
        """``3`` / ``auto`` / ``auto:N``; anything else is a one-line error naming the valid forms."""
        raw = str(text).strip()
        valid = "valid: a positive integer (e.g. 3), auto (at most 5 seeds) or auto:N (at most N seeds)"
        head, sep, tail = raw.partition(":")
        try:
            if head == "auto":
                count = int(tail) if sep else AUTO_MAX
                auto = True
            elif not sep:
                count, auto = int(raw), False
            else:
                raise ValueError
        except ValueError:
            raise PebenchError(f"--seeds {raw!r} is not understood; {valid}") from None
        if count <= 0:
            raise PebenchError(f"--seeds {raw!r}: the number of seeds must be at least 1; {valid}")
        return cls(count, auto)

    def __str__(self) -> str:
        return f"auto:{self.count}" if self.auto else str(self.count)


class AdaptiveSeeds:
    """This session's results per task, and which cells get each further seed (see the module docstring)."""

    def __init__(self, plan: SeedPlan) -> None:
        self.plan = plan
        self._records: dict[str, list[ResultRecord]] = defaultdict(list)
        self._open: dict[tuple[str, int], dict[str, str]] = {}

    def add(self, record: ResultRecord) -> None:
        self._records[record.task].append(record)

    def reason(self, case: Case) -> str | None:
        """Why seed ``case.seed`` of its cell runs ("first seed" for seed 0); None: the cell was decided before."""
        if case.seed == 0:
            return "first seed"
        for k in range(1, case.seed + 1):
            why = self._open_after(case.task, k).get(case.encoding)
            if why is None:
                return None
        return why

    def _open_after(self, task: str, k: int) -> dict[str, str]:
        """The cells of ``task`` open after seeds 0 .. k-1 (encoding -> why), computed once per (task, k)."""
        if (task, k) not in self._open:
            recs = [r for r in self._records[task] if r.seed < k]
            scores: dict[str, dict[int, dict[int, float | None]]] = defaultdict(lambda: defaultdict(dict))
            for r in recs:
                m = metrics.of_result(r.metric, r.higher_is_better)
                vocab = ((r.config or {}).get("model") or {}).get("vocab_size")
                scores[r.encoding][r.eval_length][r.seed] = scoring.normalised(r.score, m, r.chance_level, r.status,
                                                                               vocab)  # fmt: skip
            sigma = noise.task_sigma(task, recs[0].config) if recs else None
            train_length = recs[0].train_length if recs else 0
            self._open[(task, k)] = undecided(scores, train_length, sigma) if recs else {}
        return self._open[(task, k)]
