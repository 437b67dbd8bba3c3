"""Findings of one run of a database: loading the run (:func:`load_run`), the verdicts (:func:`run_findings`), and
their two forms, the terminal table (:func:`render`) and JSON (:func:`to_dict`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pandas as pd

from pebench.analysis import lr
from pebench.analysis.across_scale import size_sweep
from pebench.analysis.findings.evaluate import (
    FAILS,
    HOLDS,
    NOT_RUN,
    CheckResult,
    FindingResult,
    TermValue,
    fmt,
    missing_text,
    protocol_point,
)
from pebench.analysis.findings.evaluate import evaluate_all as _evaluate_all
from pebench.analysis.findings.published import FINDINGS
from pebench.analysis.page_data import diagnostics_run
from pebench.analysis.sweeps import one_point
from pebench.errors import PebenchError
from pebench.store.database import safe_url
from pebench.store.load import load, point_column

RUN_CHOICES = "a run id, latest, previous or all"
CASE_KEY = ["encoding", "task", "train_length", "eval_length", "seed"]


class FindingsError(PebenchError):
    """Bad input to ``pebench findings`` (the run selection)."""


def check_run(run: int | str | None) -> int | str:
    if run is None:
        return "latest"
    if isinstance(run, int) and not isinstance(run, bool):
        return run
    text = str(run).strip()
    if text in ("latest", "previous", "all"):
        return text
    try:
        return int(text)
    except ValueError:
        raise FindingsError(f"--run {run!r} is not valid; expected {RUN_CHOICES}") from None


def latest_of_each_case(df: pd.DataFrame) -> pd.DataFrame:
    """The latest result of every (encoding, task, train length, eval length, seed, sweep point) across runs."""
    if df.empty:
        return df
    latest = df.assign(point=point_column(df)).sort_values("id")
    return latest.drop_duplicates([*CASE_KEY, "point"], keep="last").drop(columns="point")


def load_run(db_url: str, run: int | str | None = "latest") -> tuple[pd.DataFrame, list[int]]:
    """The results of ``run`` (an id, ``latest``, ``previous``, or ``all``: the latest result of every case across
    runs) and the run ids they come from. Unknown runs raise a one-line error."""
    df, runs, _ = _load_run(db_url, check_run(run))
    return df, runs


def _load_run(db_url: str, choice: int | str) -> tuple[pd.DataFrame, list[int], pd.DataFrame]:
    """:func:`load_run`, and with ``all`` the rows of the diagnostics runs (``--diagnostics-run``) set aside before
    the latest result of each case is taken, when other runs remain (they are read by the mechanism claims only)."""
    df = load(db_url, None if choice == "all" else choice)
    measured = df.iloc[0:0]
    if choice == "all":
        aside = df["run_options"].map(diagnostics_run).astype(bool) if "run_options" in df else None
        if aside is not None and aside.any() and not aside.all():
            df, measured = df[~aside], latest_of_each_case(df[aside])
        df = latest_of_each_case(df)
    return df, sorted(int(r) for r in df["run_id"].unique()), measured


def evaluate_all(df: pd.DataFrame, measured: pd.DataFrame | None = None) -> list[FindingResult]:
    """Every registered finding against the results in ``df`` (the mechanism claims reading a diagnostics run's rows
    ``measured`` for the cells whose results in ``df`` store no diagnostics)."""
    return _evaluate_all(df, FINDINGS.items(), measured)


@dataclass
class FindingsReport:
    db_url: str
    run: int | str
    runs: list[int]
    results: list[FindingResult]
    diagnostics_runs: list[int] = field(default_factory=list)
    """The diagnostics runs (``--diagnostics-run``) whose rows the mechanism claims read, with ``--run all``."""

    def counts(self) -> Counter[str]:
        return Counter(r.verdict for r in self.results)

    @property
    def any_fails(self) -> bool:
        return any(r.verdict == FAILS for r in self.results)


def run_findings(db_url: str, run: int | str | None = "latest", point: str | None = None) -> FindingsReport:
    """Every finding against ``run`` (with a sweep, against its ``point``; with ``--run all``, never the runs at
    another model size, :func:`pebench.analysis.across_scale.size_sweep`, when other runs remain:
    :func:`pebench.analysis.sweeps.one_point`; a learning-rate sweep without ``point``, against each cell at its
    chosen rate: :func:`pebench.analysis.lr.at_chosen_rates`)."""
    choice = check_run(run)
    df, runs, measured = _load_run(db_url, choice)
    report = partial(FindingsReport, diagnostics_runs=sorted({int(r) for r in measured.get("run_id", [])}))
    if choice == "all" and point is None and "run_options" in df:  # a larger model is compared, never ranked here
        sized = df["run_options"].map(size_sweep).astype(bool)
        if sized.any() and not sized.all():
            df, runs = df[~sized], sorted({int(r) for r in df.loc[~sized, "run_id"]})
    # the extension's points are protocols of their own, never ranked as points nor chosen among as rates
    second = df.apply(lambda r: bool(protocol_point(r)), axis=1).astype(bool) if not df.empty else None
    first, later = (df[~second], df[second]) if second is not None else (df, df.iloc[0:0])
    if point is None and any(lr.protocol(o) is not None for o in first.get("run_options", [])):
        try:  # each cell at its own chosen rate: the rates differ from cell to cell, and are not points to rank
            chosen = lr.at_chosen_rates(db_url, first)
        except PebenchError as err:
            raise FindingsError(str(err)) from None
        return report(db_url, choice, runs, evaluate_all(pd.concat([chosen, later]), measured))
    if point is None and not df.empty:
        return report(db_url, choice, runs, evaluate_all(pd.concat([one_point(first, None), later]), measured))
    return report(db_url, choice, runs, evaluate_all(one_point(df, point), measured))


# -- text ------------------------------------------------------------------------------------------------------------
def side_text(side: TermValue | float, n_seeds: int, unicode: bool = False) -> str:
    """The number a side of a check stands for: ``0.561 [0.542, 0.579]`` (interval with several seeds),
    ``1.05 * 5.30 = 5.57`` for a scaled term; ``-`` when a case is missing."""
    if not isinstance(side, TermValue):
        return f"{side:g}"
    term, e = side.term, side.estimate
    if e is None:
        return "–" if unicode else "-"
    text = fmt(e.mean, term.metric)
    if term.factor != 1.0:
        text = f"{term.factor:g} {'×' if unicode else '*'} {text}"
    if term.offset:
        text += f" {'+' if term.offset > 0 else '-'} {abs(term.offset):g}"
    scaled = side.scaled()
    assert scaled is not None
    if term.factor != 1.0 or term.offset:
        text += f" = {fmt(scaled.mean, term.metric)}"
    if e.n > 1:
        text += f" [{fmt(scaled.low, term.metric)}, {fmt(scaled.high, term.metric)}]"
    if e.n != n_seeds:
        text += f" ({e.n} seed{'s' if e.n != 1 else ''})"
    return text


def check_mark(c: CheckResult) -> str:
    return "n/a" if c.holds is None else ("holds" if c.holds else "fails") + ("~" if c.within_noise else "")


def verdict_text(r: FindingResult) -> str:
    return r.verdict + (" (within noise)" if r.within_noise else "")


def _listed(runs: list[int]) -> str:
    return ", ".join(str(r) for r in runs)


def render(report: FindingsReport) -> str:
    counts = report.counts()
    runs = ", ".join(str(r) for r in report.runs) or "none"
    which = "latest result of every case (runs " + runs + ")" if report.run == "all" else f"run {runs}"
    lines = [
        f"findings for {which} of {safe_url(report.db_url)}: {counts[HOLDS]} hold, {counts[FAILS]} do not hold, "
        f"{counts[NOT_RUN]} not run",
        "(verdicts on the means over seeds; [low, high]: 95% BCa bootstrap interval over seeds; a check marked ~ is "
        "within noise: values inside the intervals give the other answer; see docs/findings.md)",
    ]
    if report.diagnostics_runs:
        lines.append(f"(the mechanism claims read the diagnostics of run(s) {_listed(report.diagnostics_runs)}, a "
                     "diagnostics run, for the cells whose results above store none; docs/diagnostics.md)")
    for r in report.results:
        n = len(r.seeds)
        seeds = f"{n} seed{'s' if n != 1 else ''}" if n else "no results"
        lines += ["", f"{r.name}: {verdict_text(r).upper()}  ({seeds})", f"  {r.finding.title}",
                  f"  source: {r.finding.paper}"]  # fmt: skip
        for c in r.checks:
            numbers = f"{side_text(c.left, n)} {c.check.op} {side_text(c.right, n)}"
            lines.append(f"  [{check_mark(c):<6}] {c.check.text(unicode=False)}:  {numbers}")
        if r.missing:
            lines.append(f"  missing ({missing_text(r.missing)})")
            lines.append(f"  to run them: {r.command}")
    return "\n".join(lines)


# -- JSON ------------------------------------------------------------------------------------------------------------
def _side(side: TermValue | float) -> dict[str, Any] | float:
    if not isinstance(side, TermValue):
        return side
    out: dict[str, Any] = {"term": side.term.text(unicode=False), "factor": side.term.factor,
                           "offset": side.term.offset,
                           "missing": [{"case": c, "reason": why} for c, why in side.missing]}  # fmt: skip
    scaled = side.scaled()
    if side.estimate is not None and scaled is not None:
        out.update(mean=scaled.mean, low=scaled.low, high=scaled.high, n=scaled.n, unscaled_mean=side.estimate.mean,
                   per_seed={str(s): v for s, v in side.per_seed.items()})  # fmt: skip
    return out


def result_dict(r: FindingResult) -> dict[str, Any]:
    return {
        "name": r.name,
        "title": r.finding.title,
        "paper": r.finding.paper,
        "claim": r.finding.claim,
        "verdict": r.verdict,
        "within_noise": r.within_noise,
        "seeds": r.seeds,
        "checks": [
            {"check": c.check.text(unicode=False), "holds": c.holds, "within_noise": c.within_noise,
             "left": _side(c.left), "right": _side(c.right)}
            for c in r.checks
        ],  # fmt: skip
        "missing": [{"case": c, "reason": why} for c, why in r.missing],
        "command": r.command,
    }


def to_dict(report: FindingsReport) -> dict[str, Any]:
    return {
        "db": safe_url(report.db_url),
        "run": report.run,
        "runs": report.runs,
        "diagnostics_runs": report.diagnostics_runs,
        "counts": {v: report.counts()[v] for v in (HOLDS, FAILS, NOT_RUN)},
        "findings": [result_dict(r) for r in report.results],
    }
