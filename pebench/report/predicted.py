"""The page's predicted standing of a lite run (issue 66 item 2): an encoding that ran the lite tier's tasks but not
the full tier gets its full OOD score and rank predicted (:func:`pebench.analysis.lite.predict`), shown with its 90%
interval -- the map's leave-one-encoding-out error and the run's own seed noise for the seeds it ran (issue 90) --
among the reference's measured full scores, marked as predicted.

An encoding whose row covers every task of the full tier is measured, not predicted: a full-tier run of the same
encoding replaces the prediction. With ``--with-reference`` only the run's own encodings are predicted (the reference's
rows are measured in the reference itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pebench.analysis import lite as lite_tier
from pebench.report.views import Assembled

AROUND = 2
"""Reference rows shown above and below each predicted row's rank range (and always the first)."""


@dataclass(frozen=True)
class StandingRow:
    """A row of the predicted standing: a reference encoding's measured full score, or a predicted one."""

    rank: str
    encoding: str
    score: str
    predicted: bool = False
    interval: str = ""
    color: str = ""
    holds: str = ""
    """What a predicted row's interval holds (:meth:`pebench.analysis.lite.Prediction.holds`)."""


def predicted_row(encoding: str, p: lite_tier.Prediction, color: str) -> StandingRow:
    """The standing's row of a prediction: its rank, score and interval, marked predicted."""
    return StandingRow(f"~{p.rank}", encoding, f"{p.score:.3f}", True,
                       f"[{p.low:.3f}, {p.high:.3f}], rank {p.rank_low}-{p.rank_high}", color, p.holds())  # fmt: skip


def _task_keys(assembled: Assembled) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    for (task, _), (key, _) in assembled.keys.items():
        keys.setdefault(task, []).append(key)
    return keys


def per_task_scores(assembled: Assembled, encoding: str, tasks: Sequence[str]) -> dict[str, float]:
    """``encoding``'s OOD normalised score (mean over seeds) on each of ``tasks`` it ran at one training length."""
    keys = _task_keys(assembled)
    ood = assembled.heat["ood"].get(encoding, {})
    return {t: ood[keys[t][0]] for t in tasks if len(keys.get(t, [])) == 1 and ood.get(keys[t][0]) is not None}


def per_task_seeds(assembled: Assembled, encoding: str, tasks: Sequence[str]) -> dict[str, int]:
    """How many seeds of ``encoding`` scored each of ``tasks`` out of distribution (at least 1: the interval's n)."""
    keys = _task_keys(assembled)
    per_seed = assembled.ood_per_seed.get(encoding, {})
    return {t: max(1, len(per_seed.get(keys[t][0], {}))) for t in tasks if len(keys.get(t, [])) == 1}


def standing(assembled: Assembled, yours: Sequence[str] = (),
             lite: Mapping[str, Any] | None = None) -> dict[str, Any] | None:  # fmt: skip
    """The context of the page's *Predicted standing*: the lite tier's tasks, and the reference's full scores (a
    window around each prediction) with the predicted rows inserted by score; None when no row is predicted.
    ``yours``: with ``--with-reference``, the run's own encodings (only they are predicted)."""
    lite = lite or lite_tier.load()
    full, tasks = set(lite["full_tasks"]), list(lite["tasks"])
    measured: dict[str, float] = dict(lite["reference_scores"])
    candidates = [e.encoding for e in assembled.entries if not yours or e.encoding in yours]
    predictions = {}
    for enc in candidates:
        ood = assembled.heat["ood"].get(enc, {})
        if full <= {task for (task, _), (key, _) in assembled.keys.items() if ood.get(key) is not None}:
            continue  # measured on every task of the full tier: no prediction
        found = lite_tier.predict(per_task_scores(assembled, enc, tasks), lite, exclude=enc,
                                  seeds=per_task_seeds(assembled, enc, tasks))  # fmt: skip
        if found is not None:
            predictions[enc] = found
    if not predictions:
        return None
    others = sorted(((v, e) for e, v in measured.items() if e not in predictions), reverse=True)
    shown = {1}
    for p in predictions.values():
        shown |= set(range(max(1, p.rank_low - AROUND), p.rank_high + AROUND + 1))
    rows = []
    for i, (value, enc) in enumerate(others, 1):
        here = [(e, p) for e, p in predictions.items() if p.rank == i]
        rows += [predicted_row(e, p, assembled.colors.get(e, "")) for e, p in here]
        if i in shown:
            rows.append(StandingRow(str(i), enc, f"{value:.3f}", color=assembled.colors.get(enc, "")))
        elif rows and rows[-1].encoding != "…":
            rows.append(StandingRow("", "…", ""))
    rows += [predicted_row(e, p, assembled.colors.get(e, "")) for e, p in predictions.items() if p.rank > len(others)]
    badges = {e: f"~{p.rank} ({p.rank_low}-{p.rank_high}) of {len(others) + 1}" for e, p in predictions.items()}
    return {"tasks": tasks, "rows": rows, "of": len(others), "predicted": sorted(predictions), "badges": badges,
            "n_full": len(full),
            "tau": lite["validation"]["tau"], "spearman": lite["validation"]["spearman"],
            "within": lite["validation"].get("within_3_or_range"),
            "coverage": lite["validation"].get("coverage_single_seed"),
            "coverage_n": lite["validation"].get("coverage_predictions")}  # fmt: skip
