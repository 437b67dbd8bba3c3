"""The seeds column of a task's table: how each seed's training ended (``--stop``, the stored
:class:`~pebench.status.StopReason` values) and why the row has this many seeds (``--seeds auto``), read
from the results of one encoding on one task. The page's words on stopping are decided on these values, never on
the text shown."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pebench.analysis.scoring import finite
from pebench.status import StopReason

RULE_STOPS = frozenset({StopReason.LEARNED, StopReason.PLATEAU})
"""The reasons of a model stopped by the rule before its budget."""


def per_seed(rows: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """The results of ``rows`` (one model per seed) that record a stop reason, by seed (none from before ``--stop``)."""
    return {r["seed"]: r for r in rows if isinstance(r.get("metrics"), Mapping) and "stop_reason" in r["metrics"]}


def stop_reasons(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many seeds of ``rows`` ended for each stop reason (its stored value), most first, then by name."""
    reasons = Counter(r["metrics"]["stop_reason"] for r in per_seed(rows).values())
    return dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))


def training_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """:attr:`~pebench.report.views.TaskRow.training` from the results of one encoding on one task (one model per
    seed), e.g. ``2 learned, 1 budget · 70-200 of 200 steps``; empty when no result records a stop reason (runs from
    before ``--stop``)."""
    seeds = per_seed(rows)
    if not seeds:
        return ""
    text = ", ".join(f"{n} {why}" for why, n in stop_reasons(seeds.values()).items())
    steps = sorted(int(r["train_steps"]) for r in seeds.values() if finite(r.get("train_steps")))
    budget = ((next(iter(seeds.values())).get("config") or {}).get("train") or {}).get("steps")
    if steps:
        span = f"{steps[0]}" if steps[0] == steps[-1] else f"{steps[0]}-{steps[-1]}"
        text += f" · {span}" + (f" of {budget}" if budget else "") + " steps"
    return text


def seeds_tip(rows: Iterable[Mapping[str, Any]]) -> str:
    """:attr:`~pebench.report.views.TaskRow.seeds_tip` from the results of one encoding on one task; empty without
    ``--seeds auto``."""
    why = {r["seed"]: r["metrics"]["seed_reason"] for r in rows
           if isinstance(r.get("metrics"), Mapping) and r["metrics"].get("seed_reason")}  # fmt: skip
    if not why:
        return ""
    added = [f"seed {s}: {w}" for s, w in sorted(why.items()) if s > 0]
    return "; ".join(added) if added else "decided by the first seed (--seeds auto)"


def stopped_early(reasons: Iterable[Mapping[str, int]]) -> bool:
    """Whether a model of rows with these :func:`stop_reasons` was stopped by the rule before its budget."""
    return any(not RULE_STOPS.isdisjoint(r) for r in reasons)


def whole_budget(reasons: Iterable[Mapping[str, int]]) -> bool:
    """Whether every model of rows with these :func:`stop_reasons` trained its whole budget: some row records a
    reason, and every row that does records only :attr:`~pebench.status.StopReason.BUDGET`."""
    recorded = [r for r in reasons if r]
    return bool(recorded) and all(set(r) == {StopReason.BUDGET} for r in recorded)
