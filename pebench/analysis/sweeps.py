"""Results of a sweep (``--sweep``, :mod:`pebench.engine.sweep`) are ranked one point at a time: each point is its
own configuration, and a table, a page or a finding that put two points side by side as if they were one would
compare a model with a variant of itself. The rows of a point are its own and those at no point (an encoding or task
the sweep does not apply to is the same model at every point). Across points, :func:`rankings` answers "does this
ranking hold?": each task's ranking at every point, and its rank correlation (Kendall's tau-b) with the first."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd
from scipy.stats import kendalltau

from pebench.analysis import scoring
from pebench.analysis.stats import t_interval
from pebench.errors import PebenchError
from pebench.store.load import at_point, point_column


class PointError(PebenchError):
    """Results of several sweep points where one is needed, or a point that is not there."""


def points(df: pd.DataFrame) -> list[str]:
    """The sweep points of the results ``df``, sorted; ``[]`` without a sweep."""
    return sorted({p for p in point_column(df) if p}) if not df.empty else []


def one_point(df: pd.DataFrame, point: str | None) -> pd.DataFrame:
    """The rows of sweep point ``point`` (its id part, e.g. ``layers4``) and those at no point. Without ``point``:
    ``df`` when it holds at most one point, else a one-line error naming them."""
    found = points(df)
    if point is None:
        if len(found) > 1:
            raise PointError(f"the selected results hold {len(found)} sweep points ({', '.join(found)}); they are "
                             "ranked one at a time: give --point POINT")  # fmt: skip
        return df
    if point not in found:
        raise PointError(f"--point {point!r} is not among the selected results' sweep points: "
                         f"{', '.join(found) or 'none'}")  # fmt: skip
    return at_point(df, point)


@dataclass
class PointRanking:
    """The encodings of one task at one sweep point, best first, with their score (see :func:`rankings`)."""

    point: str
    order: list[tuple[str, float]]


@dataclass
class TaskRankings:
    """One task's ranking at every sweep point, and each point's rank correlation with the first point's ranking:
    Kendall's tau-b, computed within each seed, as (mean over seeds, half-width of the 95% t interval or None with
    one seed, number of seeds)."""

    task: str
    train_length: int
    points: list[PointRanking]
    taus: dict[str, tuple[float, float | None, int]] = field(default_factory=dict)


def _scores(rows: pd.DataFrame, train_length: int) -> dict[str, dict[int, float]]:
    """encoding -> seed -> mean normalised score over the OOD lengths (the ID lengths when there are none), the
    score the leaderboard ranks by."""
    _, ood = scoring.split_lengths(sorted(set(rows["eval_length"])), train_length)
    use = rows[rows["eval_length"].isin(ood)] if ood else rows
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for (enc, seed), g in use.groupby(["encoding", "seed"]):
        value = scoring.mean(v for v in g["norm"] if v is not None)
        if value is not None:
            out[str(enc)][int(seed)] = value
    return out


def rankings(df: pd.DataFrame) -> list[TaskRankings]:
    """For every task whose results span two or more sweep points: its encodings ranked at each point (by the mean
    over seeds of the score of :func:`_scores`; the points in the order the run made them) and each point's Kendall
    tau-b against the first point, within each seed (encodings measured at both points in that seed), averaged over
    seeds with a t interval (:func:`pebench.analysis.stats.t_interval`). Tasks at one point are left out."""
    if df.empty:
        return []
    df = scoring.add_normalised(df).assign(point=point_column(df))
    out = []
    for (task, train_length), g in df.groupby(["task", "train_length"], sort=True):
        order = g[g["point"] != ""].groupby("point")["id"].min().sort_values()
        if len(order) < 2:
            continue
        per_point = {p: _scores(g[g["point"].isin({"", p})], int(train_length)) for p in order.index}
        ranked = [PointRanking(p, sorted(((e, scoring.mean(s.values()) or 0.0) for e, s in per.items()),
                                         key=lambda es: (-es[1], es[0]))) for p, per in per_point.items()]  # fmt: skip
        result = TaskRankings(str(task), int(train_length), ranked)
        first = per_point[order.index[0]]
        for p in order.index[1:]:
            taus = []
            for seed in sorted({s for per in first.values() for s in per}):
                encs = [e for e in first if seed in first[e] and seed in per_point[p].get(e, {})]
                if len(encs) >= 2:
                    tau = kendalltau([first[e][seed] for e in encs], [per_point[p][e][seed] for e in encs]).statistic
                    if math.isfinite(tau):
                        taus.append(float(tau))
            if taus:
                result.taus[p] = t_interval(taus)
        out.append(result)
    return out
