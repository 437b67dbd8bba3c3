"""The leaderboard's order with its uncertainty (:mod:`pebench.analysis.ranking`) on the page's rows.

The OOD and ID cells of a row are the task-first aggregates with their propagated 95% intervals; the rows are in
the OOD ranking's order (full rows, then the partial rows ranked apart); a row's rank is its range ("2-7") and its
tie group; the best cell of a column is marked only when its encoding is alone in the first tie group of that
column's ranking (it beats every other beyond the noise).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pebench.analysis.ranking import PerSeed, Ranked, Ranking, rank


@dataclass(frozen=True)
class Agreement:
    """How much the order depends on the aggregation: the alternative, its Spearman and Kendall with the default."""

    name: str
    what: str
    spearman: str
    kendall: str


ALTERNATIVES = {
    "mean rank": "the mean over tasks of the encoding's rank on the task (1 = best)",
    "within noise": "on how many tasks the encoding is within noise of the task's best",
}


def rankings(ood: PerSeed, id_: PerSeed, sigmas: Mapping[str, float | None]) -> tuple[Ranking, Ranking]:
    """(OOD ranking, ID ranking) of the page's per-seed normalised scores (encoding -> task key -> seed -> score)."""
    return rank(ood, sigmas), rank(id_, sigmas)


def cell_fields(r: Ranked | None) -> dict[str, Any]:
    """The :class:`~pebench.report.views.Cell` fields of a ranking row: value, half-width, tip."""
    if r is None:
        return {}
    half = (r.high - r.low) / 2
    propagated = "95% interval of the mean over tasks, from each cell's seed spread"
    how = (f"mean over {r.n_tasks} task{'s' if r.n_tasks != 1 else ''} of each task's mean over seeds; 95% interval "
           f"[{r.low:.3f}, {r.high:.3f}] from each cell's seed spread (its own seeds where it has two or more, else "
           "the task's measured spread)")  # fmt: skip
    shown = half > 0 or r.seeds > 1
    return {"value": r.score, "half": half if shown else None, "n": r.seeds, "tip": how, "half_tip": propagated}


def agreement(ranking: Ranking) -> list[Agreement]:
    """The alternatives of :data:`ALTERNATIVES` with their correlations with the default order, as text."""
    out = []
    for name, what in ALTERNATIVES.items():
        rho, tau = ranking.agreement.get(name, (None, None))
        out.append(Agreement(name, what, "–" if rho is None else f"{rho:.2f}", "–" if tau is None else f"{tau:.2f}"))
    return out


def groups_text(ranking: Ranking, limit: int = 12) -> str:
    """One sentence on the first tie groups, e.g. ``"path leads beyond noise; the next 7 are tied within it"``."""
    groups = ranking.groups
    if not groups:
        return ""
    first = groups[0]
    if len(first) == 1 and len(groups) > 1:
        text = f"{first[0]} leads beyond noise"
        tied = groups[1]
        text += (f"; the next {len(tied)} ({', '.join(tied[:limit])}{', ...' if len(tied) > limit else ''}) are tied "
                 "within it" if len(tied) > 1 else f"; {tied[0]} is second beyond noise")  # fmt: skip
        return text
    if len(first) == 1:
        return f"{first[0]} is the only ranked encoding"
    return (f"no encoding leads beyond noise: the first {len(first)} ({', '.join(first[:limit])}"
            f"{', ...' if len(first) > limit else ''}) are tied within it")  # fmt: skip


def order(ranking: Ranking, encodings: Sequence[str]) -> list[str]:
    """``encodings`` in the ranking's order (any not in it last, by name)."""
    known = [r.encoding for r in ranking.rows]
    return [e for e in known if e in set(encodings)] + sorted(set(encodings) - set(known))


def leader(ranking: Ranking) -> str | None:
    """The encoding alone in the first tie group, if there is one and the ranking has another full row."""
    groups = ranking.groups
    return groups[0][0] if len(groups) > 1 and len(groups[0]) == 1 else None
