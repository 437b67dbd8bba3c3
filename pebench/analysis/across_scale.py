"""Across scale (issue 69): does the leaderboard's order hold when the model grows?

Input: two score tables (:data:`~pebench.analysis.ranking.PerSeed`: encoding -> task -> seed -> normalised score),
one at the default model size (``base``: the leaderboard's cells, each at its chosen learning rate) and one at a
larger model (``other``: a sweep point such as ``d_model256``, its own configuration, never ranked with the default
size), and each task's measured seed sigma (:mod:`pebench.analysis.noise`, measured at the default size: the larger
model's seed noise is not measured, so its single-seed cells take the same sigma -- an assumption the page states).
Only the encodings and tasks that both sides hold are compared.

* **Each size ranked alone** by :func:`pebench.analysis.ranking.rank` on those common cells: the aggregate, rank
  ranges and tie groups exactly as the leaderboard computes them.
* **Agreement overall**: Kendall's tau-b between the two sizes' aggregates (mean over tasks of each cell's mean over
  seeds), with a 95% interval from a deterministic bootstrap (:data:`~pebench.analysis.ranking.REPLICATES`
  replicates, generator seed :data:`~pebench.analysis.ranking.SEED`) that resamples the tasks (the same draw for both
  sizes) and redraws every cell of both sizes as m + N(0, v), v the variance of the cell's mean
  (:func:`pebench.analysis.ranking.cell_stats`). It is the percentile interval of the replicates' tau: the tau a
  replication would measure. The redrawn noise itself lowers tau (noise can only break an agreement that is there),
  so for a measured tau near 1 the interval can lie below it; it is not recentred, because recentring would turn a
  tie within the noise (tau anywhere in [-1, 1]) into a confident disagreement.
* **Agreement per task**: tau-b between the two sizes' cell means over the encodings, its interval from the seed
  noise alone (the task is fixed).
* **Moved**: an encoding whose rank ranges at the two sizes do not overlap moved beyond the noise, up (a better rank
  at the larger model) or down; one whose ranges overlap did not move.
* **The leaders**: the first tie group at each size; they "stay" when every leader at the default size is still in
  the first group at the larger one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pebench.analysis.ranking import REPLICATES, SEED, PerSeed, Ranking, cell_stats, filled_sigmas, rank

SIZE_AXES = frozenset({"d_model", "layers", "heads", "scale"})
"""The sweep names that change the model's size: a run whose ``--sweep`` names only these is a larger (or smaller)
model of the same cells, compared across scale and never ranked with the default size."""


def size_sweep(options: Mapping[str, Any] | None) -> bool:
    """Whether a run with the stored ``options`` swept the model's size only (:data:`SIZE_AXES`)."""
    names = {str(spec).partition("=")[0].strip().replace("-", "_") for spec in (options or {}).get("sweep") or []}
    return bool(names) and names <= SIZE_AXES


@dataclass(frozen=True)
class Agreement:
    """Kendall's tau-b between the two sizes and its 95% interval (None where it is undefined: fewer than two
    encodings, or one size scoring them all alike)."""

    tau: float | None
    low: float | None
    high: float | None

    @property
    def text(self) -> str:
        """``0.71 [0.45, 0.88]``; ``-`` when undefined."""
        if self.tau is None:
            return "-"
        if self.low is None or self.high is None:
            return f"{self.tau:.2f}"
        return f"{self.tau:.2f} [{self.low:.2f}, {self.high:.2f}]"


@dataclass(frozen=True)
class Move:
    """One encoding at both sizes: its rank and range at each, and whether it moved beyond the noise."""

    encoding: str
    base_rank: int
    base_range: str
    other_rank: int
    other_range: str
    moved: str
    """``up``, ``down`` or ``""`` (the rank ranges overlap)."""


@dataclass
class AcrossScale:
    """The comparison of two model sizes (see the module docstring)."""

    encodings: list[str]
    tasks: list[str]
    base: Ranking
    other: Ranking
    overall: Agreement
    per_task: dict[str, Agreement] = field(default_factory=dict)
    moves: list[Move] = field(default_factory=list)

    @property
    def leaders_stay(self) -> bool:
        """Every encoding of the default size's first tie group is in the larger model's first group."""
        return bool(self.base.groups) and bool(self.other.groups) and set(self.base.groups[0]) <= set(
            self.other.groups[0])


def _common(base: PerSeed, other: PerSeed) -> tuple[list[str], list[str]]:
    """The encodings with a cell on every task both sizes share, and those tasks."""
    def cells(per: PerSeed) -> dict[str, set[str]]:
        return {e: {t for t, s in by_task.items() if s} for e, by_task in per.items()}

    b, o = cells(base), cells(other)
    encs = sorted(set(b) & set(o))
    tasks = sorted(set.intersection(*(b[e] & o[e] for e in encs))) if encs else []
    return ([e for e in encs if tasks] if tasks else []), tasks


def _matrices(per: PerSeed, encs: list[str], tasks: list[str], sig: Mapping[str, float | None]
              ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    cells = [[cell_stats(per[e][t], sig[t]) for t in tasks] for e in encs]
    return np.array([[m for m, _ in row] for row in cells]), np.array([[v or 0.0 for _, v in row] for row in cells])


def tau_b(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of ``a`` with the same row of ``b`` (replicates x encodings), NaN where a row
    scores all encodings alike: sum over pairs of sign(a_i - a_j) sign(b_i - b_j), over the square root of the
    products of the untied pairs' counts."""
    i, j = np.triu_indices(a.shape[1], k=1)
    sa, sb = np.sign(a[:, i] - a[:, j]), np.sign(b[:, i] - b[:, j])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sa * sb).sum(axis=1) / np.sqrt((sa * sa).sum(axis=1) * (sb * sb).sum(axis=1))


def _redraw(M: np.ndarray, V: np.ndarray, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(replicates, encodings): each replicate's task mean, over the tasks ``idx[r]``, of the cells redrawn as
    m + N(0, v)."""
    m, sd = M[:, idx].transpose(1, 0, 2), np.sqrt(V)[:, idx].transpose(1, 0, 2)  # replicates x encodings x tasks
    return (m + rng.standard_normal(m.shape) * sd).mean(axis=2)


def _agreement(Mb: np.ndarray, Vb: np.ndarray, Mo: np.ndarray, Vo: np.ndarray, replicates: int, seed: int,
               resample_tasks: bool) -> Agreement:  # fmt: skip
    """tau-b of the task means of ``Mb`` and ``Mo`` (encodings x tasks) and its bootstrap interval."""
    tau = float(tau_b(Mb.mean(axis=1)[None, :], Mo.mean(axis=1)[None, :])[0])
    if not math.isfinite(tau):
        return Agreement(None, None, None)
    rng = np.random.default_rng(seed)
    n_enc, n_tasks = Mb.shape
    idx = rng.integers(0, n_tasks, (replicates, n_tasks)) if resample_tasks else \
        np.broadcast_to(np.arange(n_tasks), (replicates, n_tasks))  # fmt: skip
    taus = tau_b(_redraw(Mb, Vb, idx, rng), _redraw(Mo, Vo, idx, rng))
    taus = taus[np.isfinite(taus)]
    if not len(taus):
        return Agreement(tau, None, None)
    low, high = np.quantile(taus, [0.025, 0.975], method="inverted_cdf")
    return Agreement(tau, float(low), float(high))


def _moves(base: Ranking, other: Ranking) -> list[Move]:
    out = []
    for r in base.rows:
        o = other.row(r.encoding)
        if o is None or r.rank is None or o.rank is None or None in (r.rank_low, r.rank_high, o.rank_low, o.rank_high):
            continue
        moved = "up" if o.rank_high < r.rank_low else "down" if o.rank_low > r.rank_high else ""  # type: ignore[operator]
        out.append(Move(r.encoding, r.rank, r.range_text, o.rank, o.range_text, moved))
    return out


def across_scale(base: PerSeed, other: PerSeed, sigmas: Mapping[str, float | None], replicates: int = REPLICATES,
                 seed: int = SEED) -> AcrossScale | None:  # fmt: skip
    """The comparison of ``base`` (the default size) with ``other`` (a larger model) on their common encodings and
    tasks; None when they share fewer than two encodings or no task."""
    encs, tasks = _common(base, other)
    if len(encs) < 2:
        return None
    sig = filled_sigmas(tasks, sigmas)
    b = {e: {t: base[e][t] for t in tasks} for e in encs}
    o = {e: {t: other[e][t] for t in tasks} for e in encs}
    Mb, Vb = _matrices(b, encs, tasks, sig)
    Mo, Vo = _matrices(o, encs, tasks, sig)
    out = AcrossScale(encs, tasks, rank(b, sig, replicates, seed), rank(o, sig, replicates, seed),
                      _agreement(Mb, Vb, Mo, Vo, replicates, seed, resample_tasks=True))  # fmt: skip
    for j, t in enumerate(tasks):
        col = slice(j, j + 1)
        out.per_task[t] = _agreement(Mb[:, col], Vb[:, col], Mo[:, col], Vo[:, col], replicates, seed, False)
    out.moves = _moves(out.base, out.other)
    return out
