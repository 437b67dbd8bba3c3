"""A finding against the results of one run (a frame as from :func:`pebench.store.load.load`).

* **Cases.** A term's cell (task, multiple ``m``) is the case ``{encoding}-{task}-L{m x train length}`` of the run,
  with the task's training length as stored in the run (a task run at several training lengths uses the one with
  most results).
* **Values.** An ``ok`` result gives its score (or normalised score). A **diverged** model counts as chance, as in
  the scoring layer: its normalised score is 0, its accuracy the task's chance level, its perplexity the uniform
  predictor's. An **errored** case has no value (it did not measure anything).
* **Seeds.** Per seed, a term is the mean over its cells (only seeds that have every cell); its value is the mean over
  those seeds with a 95% BCa bootstrap interval (:func:`pebench.analysis.stats.estimate`).
* **Verdict.** ``not run`` when any case a check needs has no value (the missing cases are named); otherwise
  ``holds`` when every check holds *on the means* and ``does not hold`` when one does not. With several seeds the
  verdict is **within noise** when values inside the terms' intervals would give the other verdict.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pandas as pd

from pebench import metrics
from pebench.analysis.findings.claims import DIAGNOSTICS, Check, Finding, Term
from pebench.analysis.scoring import finite, normalised
from pebench.analysis.stats import Estimate, estimate
from pebench.case import Case, model_of_id
from pebench.status import ResultStatus


class FindingVerdict(StrEnum):
    """A finding's verdict on a run."""

    HOLDS = "holds"
    FAILS = "does not hold"
    NOT_RUN = "not run"


HOLDS, FAILS, NOT_RUN = FindingVerdict


@dataclass
class TermValue:
    """A term evaluated: per-seed values and their estimate, both before the term's factor and offset."""

    term: Term
    per_seed: dict[int, float] = field(default_factory=dict)
    estimate: Estimate | None = None
    missing: list[tuple[str, str]] = field(default_factory=list)
    """(case, why it has no value): ``("rope-k_back-L128", "not in the run")``, ``("task parity", ...)``."""

    def scaled(self) -> Estimate | None:
        e, t = self.estimate, self.term
        if e is None:
            return None
        return Estimate(t.scale(e.mean), t.scale(e.low), t.scale(e.high), e.n, None, e.confidence)


@dataclass
class CheckResult:
    check: Check
    left: TermValue
    right: TermValue | float
    holds: bool | None = None
    """On the means; None when a case is missing."""
    within_noise: bool = False
    """Some values inside the seeds' 95% intervals would give the other answer."""


@dataclass
class FindingResult:
    finding: Finding
    verdict: str
    checks: list[CheckResult]
    missing: list[tuple[str, str]]
    seeds: list[int]
    within_noise: bool = False

    @property
    def name(self) -> str:
        return self.finding.name

    @property
    def command(self) -> str:
        return self.finding.command()


class Cases:
    """A run's results by (encoding, task, eval length, seed) at each task's training length (a later result of the
    same case and seed replaces an earlier one)."""

    def __init__(self, df: pd.DataFrame, measured: pd.DataFrame | None = None) -> None:
        rows = df.sort_values("id").to_dict("records") if "id" in df.columns else df.to_dict("records")
        counts: Counter[tuple[str, int]] = Counter((str(r["task"]), int(r["train_length"])) for r in rows)
        self.train_length: dict[str, int] = {}
        for (task, length), _ in sorted(counts.items(), key=lambda kv: (kv[1], kv[0][1])):
            self.train_length[task] = length  # the most results win; ties: the longer training length
        self.rows: dict[tuple[str, str, int, str], dict[int, dict[str, Any]]] = {}
        for r in rows:
            task = str(r["task"])
            if int(r["train_length"]) == self.train_length[task]:
                key = (str(r["encoding"]), task, int(r["eval_length"]), protocol_point(r))
                self.rows.setdefault(key, {})[int(r["seed"])] = r
        self.measured: dict[tuple[str, str, int, str], dict[int, dict[str, Any]]] = {}
        """The rows of a diagnostics run (``--diagnostics-run``) by the same key: a diagnostic term reads them where
        the rows of ``df`` store no value of it."""
        for r in [] if measured is None or measured.empty else measured.sort_values("id").to_dict("records"):
            if int(r["train_length"]) == self.train_length.get(str(r["task"])):
                key = (str(r["encoding"]), str(r["task"]), int(r["eval_length"]), protocol_point(r))
                self.measured.setdefault(key, {})[int(r["seed"])] = r

    def of(self, key: tuple[str, str, int, str], metric: str) -> dict[int, dict[str, Any]] | None:
        """The rows of ``key`` by seed for ``metric``: a diagnostic's from the diagnostics run where no row of
        ``key`` stores it."""
        rows = self.rows.get(key)
        if metric in DIAGNOSTICS and key in self.measured and not any(
                isinstance(r.get("metrics"), Mapping) and r["metrics"].get(metric) is not None
                for r in (rows or {}).values()):  # fmt: skip
            return self.measured[key]
        return rows


def protocol_point(row: Mapping[str, Any]) -> str:
    """A result's protocol point: its second phase's axis (``ext2x``, ``pose2x``, ``scaffold0.625``:
    :data:`pebench.engine.extension.AXES`),
    or "" (the from-scratch protocol, whatever other sweep point, such as a learning rate, it has)."""
    axes = row.get("axes")
    if isinstance(axes, list):
        return next((f"{n}{v}" for n, v in axes if n in ("ext", "pose", "scaffold")), "")
    text = str(row.get("point") or "")
    return next((part for part in text.split("-") if part.startswith(("ext", "pose")) and part.endswith("x")
                 or part.startswith("scaffold")), "")  # fmt: skip


def _vocab(row: Mapping[str, Any]) -> Any:
    config = row.get("config")
    return (config.get("model") or {}).get("vocab_size") if isinstance(config, Mapping) else None


def _value(row: Mapping[str, Any], term: Term) -> tuple[float | None, str]:
    """A result's value for ``term`` and, when it has none, why."""
    metric = metrics.of_result(row.get("metric"), row.get("higher_is_better", True))
    status = str(row.get("status"))
    if term.metric in DIAGNOSTICS:
        if status != ResultStatus.OK:
            return None, status
        value = (row.get("metrics") or {}).get(term.metric) if isinstance(row.get("metrics"), Mapping) else None
        return (float(value), "") if finite(value) else (None, "no diagnostics")
    if term.metric == "normalised":
        v = normalised(row.get("score"), metric, row.get("chance_level"), status, _vocab(row))
        return v, "" if v is not None else status if status != ResultStatus.OK else "no score"
    if metric.name != term.metric:
        return None, f"scored by {metric.name}, not {term.metric}"
    if status == ResultStatus.DIVERGED:  # a diverged model: chance
        return metric.chance_score(row.get("chance_level"), _vocab(row)), ResultStatus.DIVERGED
    if status != ResultStatus.OK:
        return None, status
    score = row.get("score")
    return (float(score), "") if finite(score) else (None, "no score")


def evaluate_term(term: Term, cases: Cases) -> TermValue:
    out = TermValue(term)
    cell_values: list[dict[int, float]] = []
    for task, m in term.cells():
        tl = cases.train_length.get(task)
        if tl is None:
            if (f"task {task}", "not in the run") not in out.missing:
                out.missing.append((f"task {task}", "not in the run"))
            continue
        length = int(round(m * tl))
        case = Case(term.encoding, task, length).id + (f"-{term.point}" if term.point else "")
        per_seed = cases.of((term.encoding, task, length, term.point), term.metric)
        if not per_seed:
            out.missing.append((case, "not in the run"))
            continue
        values, reasons = {}, []
        for seed, row in sorted(per_seed.items()):
            v, why = _value(row, term)
            if v is None:
                reasons.append(why)
            else:
                values[seed] = v
        if not values:
            out.missing.append((case, ", ".join(sorted(set(reasons)))))
            continue
        cell_values.append(values)
    if out.missing:
        return out
    seeds = sorted(set.intersection(*(set(v) for v in cell_values)))
    if not seeds:
        out.missing.append((term.text(False), "no seed has every case"))
        return out
    out.per_seed = {s: sum(v[s] for v in cell_values) / len(cell_values) for s in seeds}
    out.estimate = estimate(list(out.per_seed.values()))
    return out


def missing_text(missing: Iterable[tuple[str, str]]) -> str:
    """``not in the run: rope-lm-L64, rope-lm-L128; error: t5-copy-L48`` (missing cases grouped by reason)."""
    by_reason: dict[str, list[str]] = {}
    for case, reason in missing:
        by_reason.setdefault(reason, []).append(case)
    return "; ".join(f"{reason}: {', '.join(cases)}" for reason, cases in by_reason.items())


def _corners(e: Estimate) -> tuple[float, ...]:
    return (e.low, e.high) if e.n > 1 else (e.mean,)


def evaluate_check(check: Check, values: Mapping[int, TermValue]) -> CheckResult:
    left = values[id(check.left)]
    right: TermValue | float = values[id(check.right)] if isinstance(check.right, Term) else float(check.right)
    res = CheckResult(check, left, right)
    le = left.scaled()
    re = right.scaled() if isinstance(right, TermValue) else Estimate(right, right, right, 1)
    if le is None or re is None:
        return res
    res.holds = check.holds(le.mean, re.mean)
    flips = any(check.holds(a, b) != res.holds for a, b in itertools.product(_corners(le), _corners(re)))
    if check.op == "~=" and not res.holds and le.overlaps(re) and (le.n > 1 or re.n > 1):
        flips = True  # equal values lie inside both intervals
    res.within_noise = flips
    return res


def _case_order(missing: tuple[str, str]) -> tuple[Any, ...]:
    """Whole tasks first, then cases by encoding, task and length (``L64`` before ``L128``)."""
    case = missing[0]
    if case.startswith("task "):
        return (0, case, 0)
    parsed = model_of_id(case)
    return (0, case, 0) if parsed is None else (1, *parsed)


def evaluate(finding: Finding, df: pd.DataFrame, cases: Cases | None = None) -> FindingResult:
    """``finding`` against the results in ``df`` (one run, or the latest result of each case across runs)."""
    cases = cases or Cases(df)
    values = {id(t): evaluate_term(t.base, cases) for t in finding.terms()}
    for t in finding.terms():  # evaluated on the bare term; the check applies the factor and offset
        values[id(t)].term = t
    checks = [evaluate_check(c, values) for c in finding.checks]
    missing = sorted(dict.fromkeys(m for v in values.values() for m in v.missing), key=_case_order)
    seeds = sorted({s for v in values.values() for s in v.per_seed})
    if missing:
        return FindingResult(finding, NOT_RUN, checks, missing, seeds)
    ok = all(c.holds for c in checks)
    if ok:
        noisy = any(c.within_noise for c in checks)
    else:
        noisy = all(c.within_noise for c in checks if not c.holds)
    return FindingResult(finding, HOLDS if ok else FAILS, checks, [], seeds, noisy)


def evaluate_all(df: pd.DataFrame, findings: Iterable[Finding], measured: pd.DataFrame | None = None
                 ) -> list[FindingResult]:  # fmt: skip
    cases = Cases(df, measured)
    return [evaluate(f, df, cases) for f in findings]


def fmt(value: float | None, metric: str) -> str:
    """A value in a term's units: fractions (a percent metric, or the normalised score) with three decimals, other
    metrics with their own digits (perplexity: two)."""
    if value is None or not math.isfinite(value):
        return "-"
    m = metrics.get(metric) if metric in metrics.available() else None
    return f"{value:.3f}" if m is None or m.percent else f"{value:.{m.digits}f}"
