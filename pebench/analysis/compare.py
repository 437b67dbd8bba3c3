"""Regression verdicts between two runs (``pebench compare``) and against a baseline inside the suite
(``pytest suite --baseline``).

Accuracy (``pebench compare``): the seeds of each (encoding, task, evaluation length) are aggregated into a mean with
a bootstrap confidence interval (:func:`pebench.stats.estimate`). A case **regressed** when its score got worse by
more than the tolerance -- ``accuracy`` absolute (default 0.02) for accuracy-like metrics, ``perplexity`` relative
(default 5%) for perplexity -- *and*, when either run has several seeds, the two intervals do not overlap. It
**improved** under the mirrored condition, and is the **same** otherwise. The direction comes from the result's
``higher_is_better``. A case whose configuration differs between the runs is listed as not comparable; a case with
an ``ok`` result in the base run but none in the current run (diverged, error) regressed.

Speed: training throughput (tokens/s) per (encoding, task), one value per seed, regressed when it dropped by more
than ``speed`` (default 15%) relative and, with several seeds, the intervals do not overlap.

Inside the suite each case is checked against a baseline run as it finishes: :mod:`pebench.analysis.baseline`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pebench import metrics
from pebench.analysis import lr
from pebench.analysis.scoring import ok_scores
from pebench.analysis.stats import Estimate, estimate
from pebench.case import case_id, model_name
from pebench.errors import PebenchError
from pebench.metrics import Metric, Tolerances
from pebench.store.database import open_readonly, resolve_run_id
from pebench.store.load import load, point_column

if TYPE_CHECKING:
    import pandas as pd

KEY = ("encoding", "task", "eval_length", "point")
"""A case of the comparison: the sweep point (``lr0.001``, ``layers4``; ``""`` for none) keeps each point apart."""


class CompareError(PebenchError):
    """Runs that cannot be compared: unknown ids, no case in common, incompatible configurations."""


def threshold(metric: Metric, base: float, tol: Tolerances) -> float:
    """The change of the score that counts as more than the tolerance, in the metric's own units."""
    return tol.perplexity * abs(base) if metric.relative else tol.accuracy


def gain(base: float, current: float, higher_is_better: bool) -> float:
    """How much better ``current`` is than ``base`` (negative: worse)."""
    return current - base if higher_is_better else base - current


class Verdict(StrEnum):
    """A case's or a model's speed's verdict between two runs."""

    REGRESSED = "regressed"
    IMPROVED = "improved"
    SAME = "same"


def verdict(base: Estimate, current: Estimate, limit: float, higher_is_better: bool) -> Verdict:
    """regressed / improved / same: the change must exceed ``limit`` and, with several seeds on either side, the
    intervals must not overlap."""
    g = gain(base.mean, current.mean, higher_is_better)
    noisy = (base.n > 1 or current.n > 1) and base.overlaps(current)
    if abs(g) <= limit or noisy:
        return Verdict.SAME
    return Verdict.IMPROVED if g > 0 else Verdict.REGRESSED


def est_dict(e: Estimate | None) -> dict[str, Any] | None:
    return None if e is None else {"mean": e.mean, "low": e.low, "high": e.high, "n": e.n, "iqm": e.iqm}


@dataclass
class CaseComparison:
    encoding: str
    task: str
    eval_length: int
    point: str
    metric: str
    higher_is_better: bool
    base: Estimate | None
    current: Estimate | None
    delta: float | None
    verdict: str
    note: str = ""

    @property
    def case(self) -> str:
        return case_id(self.encoding, self.task, self.eval_length, self.point)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "encoding": self.encoding,
            "task": self.task,
            "eval_length": self.eval_length,
            "point": self.point,
            "metric": self.metric,
            "higher_is_better": self.higher_is_better,
            "base": est_dict(self.base),
            "current": est_dict(self.current),
            "delta": self.delta,
            "verdict": self.verdict,
            "note": self.note,
        }


@dataclass
class SpeedComparison:
    encoding: str
    task: str
    point: str
    base: Estimate
    current: Estimate
    change: float  # relative change of tokens/s
    verdict: str

    @property
    def model(self) -> str:
        return model_name(self.encoding, self.task, self.point)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "encoding": self.encoding,
            "task": self.task,
            "base_tokens_per_s": est_dict(self.base),
            "current_tokens_per_s": est_dict(self.current),
            "change": self.change,
            "verdict": self.verdict,
        }


@dataclass
class Comparison:
    base_run: int
    current_run: int
    tolerances: Tolerances
    cases: list[CaseComparison] = field(default_factory=list)
    speed: list[SpeedComparison] = field(default_factory=list)
    only_in_base: list[str] = field(default_factory=list)
    only_in_current: list[str] = field(default_factory=list)
    incompatible: list[str] = field(default_factory=list)
    devices: tuple[str, str] | None = None  # (base, current) when the runs' devices differ
    protocol: str = "one learning rate"  # both runs' (they never differ: compare_runs refuses)

    @property
    def regressions(self) -> list[CaseComparison]:
        return [c for c in self.cases if c.verdict == Verdict.REGRESSED]

    @property
    def speed_regressions(self) -> list[SpeedComparison]:
        return [s for s in self.speed if s.verdict == Verdict.REGRESSED]

    @property
    def regressed(self) -> bool:
        return bool(self.regressions or self.speed_regressions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_run": self.base_run,
            "current_run": self.current_run,
            "tolerances": asdict(self.tolerances),
            "regressed": self.regressed,
            "accuracy_regressions": [c.case for c in self.regressions],
            "speed_regressions": [s.model for s in self.speed_regressions],
            "cases": [c.to_dict() for c in self.cases],
            "speed": [s.to_dict() for s in self.speed],
            "only_in_base": self.only_in_base,
            "only_in_current": self.only_in_current,
            "incompatible": self.incompatible,
            "devices": list(self.devices) if self.devices else None,
            "protocol": self.protocol,
        }


def _case_name(key: tuple[Any, ...]) -> str:
    return case_id(str(key[0]), str(key[1]), int(key[2]), str(key[3]))


def config_difference(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Human-readable differences between two config dicts, e.g. ``['train.steps: 3 vs 5']``."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            out += config_difference(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return [] if a == b else [f"{prefix.rstrip('.')}: {a} vs {b}"]


def compare_frames(base: pd.DataFrame, current: pd.DataFrame, tol: Tolerances, base_run: int = 0,
                   current_run: int = 0) -> Comparison:  # fmt: skip
    """Compare two runs' results (DataFrames as from :func:`pebench.results.load`)."""
    out = Comparison(base_run, current_run, tol)
    if base.empty or current.empty:
        empty = base_run if base.empty else current_run
        raise CompareError(f"run {empty} has no results to compare")
    base, current = (df.assign(point=point_column(df)) for df in (base, current))
    b_groups = {k: g for k, g in base.groupby(list(KEY), sort=True)}
    c_groups = {k: g for k, g in current.groupby(list(KEY), sort=True)}
    out.only_in_base = [_case_name(k) for k in sorted(set(b_groups) - set(c_groups))]
    out.only_in_current = [_case_name(k) for k in sorted(set(c_groups) - set(b_groups))]
    common = sorted(set(b_groups) & set(c_groups))
    if not common:
        raise CompareError(f"runs {base_run} and {current_run} have no case in common")
    example = ""
    for key in common:
        b, c = b_groups[key], c_groups[key]
        key = (str(key[0]), str(key[1]), int(key[2]), str(key[3]))
        hashes = set(b["config_hash"]) & set(c["config_hash"])
        if not hashes:
            out.incompatible.append(_case_name(key))
            diff = config_difference(b.iloc[0]["config"], c.iloc[0]["config"])
            example = example or f"{_case_name(key)}: {'; '.join(diff[:3]) or 'config hash differs'}"
            continue
        h = sorted(hashes)[0]
        b, c = b[b["config_hash"] == h], c[c["config_hash"] == h]
        m = metrics.of_result(c.iloc[0]["metric"], c.iloc[0]["higher_is_better"])
        metric, hib = str(c.iloc[0]["metric"]), m.higher_is_better
        bv, cv = ok_scores(b), ok_scores(c)
        be, ce = (estimate(bv) if bv else None), (estimate(cv) if cv else None)
        if be is not None and ce is not None:
            v = verdict(be, ce, threshold(m, be.mean, tol), hib)
            row = CaseComparison(*key, metric, hib, be, ce, ce.mean - be.mean, v)
        elif be is not None:
            statuses = ",".join(sorted(set(c["status"])))
            row = CaseComparison(*key, metric, hib, be, None, None, Verdict.REGRESSED, f"current run: {statuses}")
        elif ce is not None:
            statuses = ",".join(sorted(set(b["status"])))
            row = CaseComparison(*key, metric, hib, None, ce, None, Verdict.IMPROVED, f"base run: {statuses}")
        else:
            row = CaseComparison(*key, metric, hib, None, None, None, Verdict.SAME, "no ok result in either run")
        out.cases.append(row)
    if not out.cases:
        raise CompareError(
            f"runs {base_run} and {current_run} have no case with the same config "
            f"({len(out.incompatible)} differ, e.g. {example})"
        )
    out.speed = _compare_speed(base, current, {(c.encoding, c.task, c.point) for c in out.cases}, tol)
    devices = tuple(", ".join(sorted(set(map(str, df["run_device"])))) if "run_device" in df else "?"
                    for df in (base, current))  # fmt: skip
    if devices[0] != devices[1]:
        out.devices = (devices[0], devices[1])
    return out


def _throughput(rows: pd.DataFrame) -> list[float]:
    """One training throughput per seed (all lengths of a seed share one trained model)."""
    rows = rows[rows["tokens_per_s"].notna() & (rows["tokens_per_s"] > 0)]
    return [float(v) for v in rows.groupby("seed")["tokens_per_s"].first()]


def _compare_speed(base: pd.DataFrame, current: pd.DataFrame, models: Iterable[tuple[str, str, str]],
                   tol: Tolerances) -> list[SpeedComparison]:  # fmt: skip
    out = []
    for enc, task, point in sorted(models):
        b, c = (df[(df["encoding"] == enc) & (df["task"] == task) & (df["point"] == point)] for df in (base, current))
        hashes = set(b["config_hash"]) & set(c["config_hash"])
        bv = _throughput(b[b["config_hash"].isin(hashes)])
        cv = _throughput(c[c["config_hash"].isin(hashes)])
        if not bv or not cv:
            continue
        be, ce = estimate(bv), estimate(cv)
        change = (ce.mean - be.mean) / be.mean
        v = verdict(be, ce, tol.speed * be.mean, higher_is_better=True)
        out.append(SpeedComparison(enc, task, point, be, ce, change, v))
    return out


def compare_runs(url: str, base: int | str, current: int | str, tol: Tolerances | None = None) -> Comparison:
    """Compare run ``base`` with run ``current`` (ids, ``latest`` or ``previous``) of the database at ``url``."""
    engine = open_readonly(url)
    try:
        base_id, current_id = resolve_run_id(engine, base), resolve_run_id(engine, current)
    finally:
        engine.dispose()
    if base_id == current_id:
        raise CompareError(f"BASE and CURRENT are the same run ({base_id})")
    base_df, current_df = load(url, base_id), load(url, current_id)
    options = [df["run_options"].iloc[0] if not df.empty else {} for df in (base_df, current_df)]
    try:
        lr.check_same_protocol(*options, what=f"runs {base_id} and {current_id}")
    except PebenchError as err:
        raise CompareError(str(err)) from None
    cmp = compare_frames(base_df, current_df, tol or Tolerances(), base_id, current_id)
    cmp.protocol = lr.protocol_text(options[0]) + ("" if lr.protocol(options[0]) is None else
                                                   " (each rate's cells compared as their own cases)")
    return cmp


# -- text output -------------------------------------------------------------------------------------------------
def _fmt(e: Estimate | None, digits: int = 3) -> str:
    if e is None:
        return "-"
    if e.n == 1:
        return f"{e.mean:.{digits}f}"
    return f"{e.mean:.{digits}f} [{e.low:.{digits}f},{e.high:.{digits}f}] n={e.n}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    return [line(header), line(["-" * w for w in widths]), *[line(r) for r in rows]]


def render(cmp: Comparison) -> str:
    t = cmp.tolerances
    lines = [
        f"base run {cmp.base_run} -> current run {cmp.current_run}  (tolerance: accuracy {t.accuracy:g} absolute, "
        f"perplexity {t.perplexity:.0%} relative, speed {t.speed:.0%}; means with 95% bootstrap CI over seeds)",
        f"protocol: {cmp.protocol}",
        "",
    ]
    rows = [
        [c.case, c.metric, _fmt(c.base), _fmt(c.current), "-" if c.delta is None else f"{c.delta:+.3f}",
         c.verdict + (f" ({c.note})" if c.note else "")]
        for c in cmp.cases
    ]  # fmt: skip
    lines += _table(["case", "metric", "base", "current", "delta", "verdict"], rows)
    if cmp.speed:
        lines += ["", "training speed (tokens/s):"]
        rows = [
            [s.model, _fmt(s.base, 0), _fmt(s.current, 0), f"{s.change:+.1%}", s.verdict]
            for s in cmp.speed
        ]
        lines += _table(["model", "base", "current", "change", "verdict"], rows)
    for title, names in (
        ("only in base run", cmp.only_in_base),
        ("only in current run", cmp.only_in_current),
        ("not comparable (config differs)", cmp.incompatible),
    ):
        if names:
            lines += ["", f"{title} ({len(names)}): {', '.join(names)}"]
    if cmp.devices:
        lines += ["", f"note: the runs ran on different devices ({cmp.devices[0]} vs {cmp.devices[1]}): float "
                  "rounding differs with the device and, on the CPU, with the thread count, and it can flip a "
                  "single seed between learned and not; speeds are not comparable"]  # fmt: skip
    lines += [
        "",
        f"{len(cmp.regressions)} accuracy regression(s), {len(cmp.speed_regressions)} speed regression(s), "
        f"{sum(c.verdict == Verdict.IMPROVED for c in cmp.cases)} improved, "
        f"{sum(c.verdict == Verdict.SAME for c in cmp.cases)} same",
    ]
    return "\n".join(lines)
