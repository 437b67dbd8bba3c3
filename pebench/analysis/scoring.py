"""How a score becomes a rank: pure functions over a results DataFrame (as from :func:`pebench.store.load.load`).

* **In-distribution (ID)** lengths are evaluation lengths up to the training length; **out-of-distribution (OOD)**
  lengths are longer ones (:func:`split_lengths`).
* **Normalised score** of one result: :meth:`pebench.metrics.Metric.normalise` (0 = chance, 1 = perfect); a diverged
  model scores 0 (chance); an errored case has none (:func:`normalised`).
* **Per seed**: the mean over a set of lengths of one seed's scores (:func:`per_seed_norm`, :func:`per_seed_metric`);
  the **gap** is ID minus mean OOD in the metric's display units, signed so that lower is better
  (:func:`gap_per_seed`).
* **Aggregate** of an encoding, its interval, rank range and tie group: :mod:`pebench.analysis.ranking` (per task
  the mean over seeds first, then the mean over tasks).
* **Best of** a column (:func:`best_of`): every value tied with the best at the displayed precision. What the report
  and the terminal *mark* as best is stricter: one encoding beyond the noise (:mod:`pebench.analysis.noise`).
* **Learned** (:func:`learned_verdict`): a normalised in-distribution score of at least 0.5 is *learned*, of at least
  0.1 *partly*, else *not learned*.
* **How far** an encoding carries a task beyond its training length: :mod:`pebench.analysis.reach`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from pebench import metrics
from pebench.metrics import Metric
from pebench.status import ResultStatus

if TYPE_CHECKING:
    import pandas as pd


def finite(v: Any) -> bool:
    """A real number that is neither NaN nor infinite (None, strings and booleans are not)."""
    return v is not None and isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(float(v))


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the finite values, None when there are none."""
    vals = [float(v) for v in values if finite(v)]
    return sum(vals) / len(vals) if vals else None


def metric_of(row: Mapping[str, Any]) -> Metric:
    """The metric of a result row (see :func:`pebench.metrics.of_result`)."""
    return metrics.of_result(row.get("metric"), row.get("higher_is_better", True))


def normalised(
    score: float | None,
    metric: Metric,
    chance: float | None,
    status: str = ResultStatus.OK,
    vocab_size: int | None = None,
) -> float | None:
    """A result's normalised score: 0 when it diverged, None when it failed or the score is undefined."""
    if status == ResultStatus.DIVERGED:
        return 0.0
    if status != ResultStatus.OK:
        return None
    return metric.normalise(score, chance, vocab_size)


def add_normalised(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with ``norm``, the normalised score of each row (the vocabulary size from its config)."""
    df = df.copy()
    norms = []
    for status, score, name, hib, chance, config in zip(
        df["status"], df["score"], df["metric"], df["higher_is_better"], df["chance_level"], df["config"], strict=True
    ):
        vocab = (config.get("model") or {}).get("vocab_size") if isinstance(config, Mapping) else None
        norms.append(normalised(score, metrics.of_result(name, hib), chance, str(status), vocab))
    df["norm"] = norms
    return df


def split_lengths(lengths: Iterable[int], train_length: int) -> tuple[list[int], list[int]]:
    """(ID lengths, OOD lengths) of sorted ``lengths``."""
    lengths = sorted(lengths)
    return [L for L in lengths if train_length >= L], [L for L in lengths if train_length < L]


class Group:
    """The results of one (task, train length, encoding): per evaluation length, per seed, the row as a dict."""

    def __init__(self) -> None:
        self.by_length: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)

    def seeds(self) -> list[int]:
        return sorted({s for per_seed in self.by_length.values() for s in per_seed})

    def rows(self) -> Iterable[dict[str, Any]]:
        for per_seed in self.by_length.values():
            yield from per_seed.values()


def groups_by_task(df: pd.DataFrame) -> dict[tuple[str, int], dict[str, Group]]:
    """(task, train length) -> encoding -> :class:`Group` of ``df``'s rows (a later row of the same case and seed
    replaces an earlier one)."""
    groups: dict[tuple[str, int], dict[str, Group]] = defaultdict(lambda: defaultdict(Group))
    for rec in df.to_dict("records"):
        groups[(rec["task"], int(rec["train_length"]))][rec["encoding"]].by_length[int(rec["eval_length"])][
            int(rec["seed"])
        ] = rec
    return groups


def per_seed_norm(group: Group, lengths: Iterable[int]) -> dict[int, float]:
    """Seed -> mean normalised score over ``lengths`` (seeds with no defined score are left out)."""
    lengths = list(lengths)
    out: dict[int, float] = {}
    for seed in group.seeds():
        m = mean(group.by_length[L][seed]["norm"] for L in lengths if seed in group.by_length[L])
        if m is not None:
            out[seed] = m
    return out


def per_seed_metric(group: Group, lengths: Iterable[int], metric: Metric) -> dict[int, float]:
    """Seed -> mean score over ``lengths`` in the metric's display units."""
    lengths = list(lengths)
    out: dict[int, float] = {}
    for seed in group.seeds():
        m = mean(group.by_length[L][seed]["score"] for L in lengths if seed in group.by_length[L])
        if m is not None:
            out[seed] = metric.display(m)  # type: ignore[assignment]
    return out


def gap_per_seed(group: Group, id_lengths: list[int], ood_lengths: list[int], metric: Metric) -> dict[int, float]:
    """Seed -> generalisation gap (ID minus mean OOD, signed so that lower is better) in display units."""
    ids = per_seed_metric(group, id_lengths, metric)
    oods = per_seed_metric(group, ood_lengths, metric)
    return {s: (ids[s] - oods[s]) if metric.higher_is_better else (oods[s] - ids[s]) for s in ids if s in oods}


def ok_scores(rows: pd.DataFrame) -> list[float]:
    """The finite scores of the ``ok`` rows."""
    ok = rows[rows["status"] == ResultStatus.OK]
    return [float(v) for v in ok["score"] if v is not None and math.isfinite(v)]


def best_of(values: Sequence[float | None], digits: int, better: Callable[[Iterable[float]], float]) -> list[bool]:
    """Which of ``values`` are the best (``better`` is ``max`` or ``min``): every value that, rounded to ``digits``
    as displayed, equals the best displayed value -- ties are all best."""
    shown = [round(v, digits) for v in values if v is not None]
    if not shown:
        return [False] * len(values)
    top = better(shown)
    return [v is not None and round(v, digits) == top for v in values]


LEARNED = 0.5
"""The normalised score from which a task counts as *learned* (:func:`learned_verdict`)."""
PARTLY = 0.1
"""The normalised score from which a task counts as *partly* learned; below it, *not learned*."""


class Learned(StrEnum):
    """How well a task was learned (:func:`learned_verdict`); ``failed``: no case finished ok."""

    LEARNED = "learned"
    PARTLY = "partly"
    NOT_LEARNED = "not learned"
    FAILED = "failed"


def learned_verdict(fraction: float | None) -> Learned:
    """``learned`` (>= :data:`LEARNED` of the way from chance to perfect), ``partly`` (>= :data:`PARTLY`) or
    ``not learned``."""
    fraction = fraction or 0.0
    return Learned.LEARNED if fraction >= LEARNED else Learned.PARTLY if fraction >= PARTLY else Learned.NOT_LEARNED


def training_length_scores(df: pd.DataFrame, task: str) -> list[dict[str, Any]]:
    """One row per encoding of ``task``: its score at the training length (the newest ``ok`` one), chance level,
    normalised score (``fraction``) and :func:`learned_verdict`; ``score=None`` and verdict ``failed`` when no
    case finished ok."""
    rows = []
    sub = df[(df.task == task) & (df.eval_length == df.train_length)]
    for enc, g in sub.groupby("encoding", sort=False):
        ok = g[g.status == ResultStatus.OK]
        if ok.empty:
            chance = float(g.chance_level.iloc[0])
            rows.append({"encoding": enc, "score": None, "chance": chance, "verdict": Learned.FAILED})
            continue
        r = ok.iloc[-1]
        frac = metrics.of_result(r.metric, r.higher_is_better).normalise(float(r.score), float(r.chance_level))
        rows.append({"encoding": enc, "score": float(r.score), "chance": float(r.chance_level),
                     "metric": r.metric, "fraction": frac, "verdict": learned_verdict(frac)})  # fmt: skip
    return rows
