"""The page's "Across scale" section (issue 69): the shown ranking beside the same cells at a larger model, for the
runs set aside as another model size (:func:`pebench.report.data.set_aside_sizes`): Kendall's tau of the two orders
with its interval, each task's tau, who moved beyond the noise and whether the leaders stay
(:func:`pebench.analysis.across_scale.across_scale`). Compact by design: one table of the compared encodings, never a
full ranking per size."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pebench.analysis import lr, scoring
from pebench.analysis.across_scale import AcrossScale, across_scale
from pebench.analysis.ranking import PerSeed
from pebench.records.frame import at_point, point_column, points
from pebench.report import views


@dataclass
class ScaleView:
    """One larger model (a sweep point) against the page's rows."""

    point: str
    protocol: str
    """The larger run's learning-rate protocol, in words."""
    result: AcrossScale
    rows: list[tuple[str, str, str, str, str]]
    """Per compared encoding, in the default size's order: (encoding, colour, rank at the default size with its
    range, rank at the larger model with its range, ``↑``/``↓`` when it moved beyond the noise else ``–``)."""
    per_task: list[tuple[str, str]]
    """(task, tau text) per task."""
    sentence: str
    same_rate: str = ""
    """Against the default size's results at the larger run's one learning rate (a learning-rate protocol page,
    whose every rate is stored): the comparison without the per-cell choice of rate; empty otherwise."""


def ood_per_seed(sel: pd.DataFrame) -> PerSeed:
    """Encoding -> task key -> seed -> normalised OOD score of ``sel`` (rows with their configs): the leaderboard's
    input, which :func:`~pebench.report.views.assemble` gathers while it builds the tables, read alone (all that the
    comparisons here need)."""
    groups = scoring.groups_by_task(scoring.add_normalised(sel))
    keys = views.task_keys(groups)
    out: dict[str, dict[str, dict[int, float]]] = defaultdict(dict)
    for tk, enc_groups in groups.items():
        lengths = sorted({L for g in enc_groups.values() for L in g.by_length})
        ood_lengths = scoring.split_lengths(lengths, tk[1])[1]
        for enc, g in enc_groups.items():
            if o_norm := scoring.per_seed_norm(g, ood_lengths):
                out[enc][keys[tk][0]] = o_norm
    return dict(out)


def _moved(r: AcrossScale) -> tuple[str, str]:
    """The encodings that moved up and down beyond the noise (``none`` for none)."""
    return (", ".join(m.encoding for m in r.moves if m.moved == "up") or "none",
            ", ".join(m.encoding for m in r.moves if m.moved == "down") or "none")  # fmt: skip


def _same_rate(every_point: pd.DataFrame | None, rows: pd.DataFrame, rate: float | None,
               other: PerSeed, sigmas: Mapping[str, float | None]) -> str:  # fmt: skip
    """The comparison with the default size's results at ``rate`` (the larger run's one rate), when ``every_point``
    holds them: the like-for-like check of a protocol page, whose cells each chose their own rate."""
    if every_point is None or every_point.empty or rate is None:
        return ""
    at = next((str(p) for p in set(points(every_point)) if lr.rate_at(p) == rate), None)
    if at is None:
        return ""
    base = at_point(every_point, at)
    base = base[base["encoding"].isin(set(rows["encoding"])) & base["task"].isin(set(rows["task"]))]
    result = across_scale(ood_per_seed(base), other, sigmas) \
        if not base.empty else None  # fmt: skip
    if result is None:
        return ""
    ups, downs = _moved(result)
    return (f"Against the default size at the same learning rate ({rate:g} in every cell, its {at} results, not each "
            f"cell's chosen rate): τ-b {result.overall.text}; beyond the noise, up: {ups}; down: {downs}.")


def _sentence(point: str, r: AcrossScale) -> str:
    ups, downs = _moved(r)
    leaders = r.base.groups[0] if r.base.groups else []
    who = f"The leader {leaders[0]}" if len(leaders) == 1 else f"The leaders ({', '.join(leaders)})"
    stay = ("stays" if len(leaders) == 1 else "stay") if r.leaders_stay else \
        ("does not stay" if len(leaders) == 1 else "do not all stay")  # fmt: skip
    return (f"At {point}, the order of {len(r.encodings)} encodings on {len(r.tasks)} tasks agrees with the default "
            f"size's by Kendall's τ-b {r.overall.text}. Beyond the noise, up: {ups}; down: {downs}. {who} {stay} "
            "in the first tie group.")  # fmt: skip


def _rank(rank: int, range_text: str) -> str:
    """``3 (2-7)``, or ``3`` when the range is the rank alone."""
    return str(rank) if range_text == str(rank) else f"{rank} ({range_text})"


def scale_views(sizes: pd.DataFrame, size_runs: Sequence[Mapping[str, Any]], shown: views.Assembled,
                every_point: pd.DataFrame | None = None) -> list[ScaleView]:  # fmt: skip
    """One view per point of ``sizes`` (the rows of the runs at another model size) that shares two encodings and a
    task with the page's rows ``shown``; with ``every_point`` (a learning-rate protocol page's rows at every rate),
    also the comparison at the larger run's own rate (:func:`_same_rate`)."""
    if sizes.empty:
        return []
    protocols = {int(r["id"]): lr.protocol_text(r["options"]) for r in size_runs}
    one_rate = {int(r["id"]): (r["options"] or {}).get("lr") if lr.protocol(r["options"]) is None else None
                for r in size_runs}  # fmt: skip
    out = []
    for point, rows in sizes.assign(point=point_column(sizes)).groupby("point", sort=True):
        other = ood_per_seed(rows.drop(columns=["point"]))
        result = across_scale(shown.ood_per_seed, other, shown.sigmas)
        if result is None:
            continue
        arrow = {"up": "↑", "down": "↓", "": "–"}
        table = [(m.encoding, shown.colors.get(m.encoding, "#555555"), _rank(m.base_rank, m.base_range),
                  _rank(m.other_rank, m.other_range), arrow[m.moved]) for m in result.moves]  # fmt: skip
        runs = sorted({int(r) for r in rows["run_id"]})
        rates = {one_rate.get(r) for r in runs}
        rate = float(rates.pop()) if len(rates) == 1 and None not in rates else None
        out.append(ScaleView(str(point), "; ".join(sorted({protocols.get(r, "?") for r in runs})), result, table,
                             [(t, a.text) for t, a in result.per_task.items()], _sentence(str(point), result),
                             _same_rate(every_point, rows, rate, other, shown.sigmas)))
    return out
