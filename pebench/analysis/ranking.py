"""The leaderboard's order with its uncertainty: a task-first aggregate, its interval, rank ranges and tie groups.

Input: per encoding, per task, per seed, one normalised score (0 = chance, 1 = perfect; the OOD or ID mean of that
seed's results, :func:`pebench.analysis.scoring.per_seed_norm`) and each task's measured seed-to-seed sigma
(:mod:`pebench.analysis.noise`). Everything is computed on the **full rows**, the encodings with a cell on every
task of the run; an encoding that applies to fewer tasks (abacus and coupling on the reference) is **ranked apart**:
it keeps its aggregate and interval over its own tasks, never a rank among the full rows (three tasks are not the
field's tasks).

* **Cell**: m(e, t), the mean over the seeds of (encoding e, task t); the variance of that mean, v(e, t), is s^2 / n
  from the cell's own n >= 2 seeds (sample standard deviation s), else sigma_t^2 for its single seed, sigma_t the
  task's measured spread; without one, the median sigma of the tasks that have one.
* **Aggregate** (task first): A(e) = mean over t of m(e, t), so seeds that only some tasks have do not reweight
  their tasks. Its 95% interval: A +- 1.96 * sqrt(sum_t v(e, t)) / T, the seed noise of each task propagated through
  the mean (tasks independent).
* **Rank ranges**: a deterministic bootstrap (:data:`REPLICATES` replicates, generator seed :data:`SEED`) resamples
  *both* sources of doubt: the tasks (T drawn with replacement, the same draw for every encoding), and the seed
  noise (each cell redrawn as m + N(0, v)). An encoding's rank range is the 2.5th to 97.5th percentile of its rank
  over the replicates. Beside it, the range from the seed noise alone (the tasks fixed: would more seeds on *these*
  tasks change the order?), ``seed_low``-``seed_high``.
* **Tie groups**: going down the order, an encoding joins the current group when its group's first encoding beats
  it in fewer than 97.5% of the replicates (the difference is inside the noise); otherwise it starts the next group.
  Group 1 is the leaders': "PaTH leads beyond noise" means PaTH is alone in group 1.
* **How much the order depends on the aggregation**: beside the default (mean normalised score), the mean of each
  encoding's rank per task (1 = best; ties share the mean rank) and the number of tasks on which the encoding is
  within noise of the task's best cell (1.96 * sqrt(v_best + v_e)); with Spearman's rho and Kendall's tau between
  each and the default order.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

Z95 = 1.959964
REPLICATES = 2000
"""Bootstrap replicates of the rank ranges and tie groups."""
SEED = 0
"""The bootstrap's generator seed: the same data give the same ranges."""
BEYOND = 0.975
"""The share of replicates in which the group's first encoding must beat another for the two to differ."""

PerSeed = Mapping[str, Mapping[str, Mapping[int, float]]]
"""encoding -> task -> seed -> normalised score."""


@dataclass(frozen=True)
class Ranked:
    """One encoding of a :class:`Ranking`; ``rank``, its range, ``group`` and the alternatives are None for a
    partial row."""

    encoding: str
    score: float
    low: float
    high: float
    n_tasks: int
    seeds: int
    """The most seeds any of its cells has."""
    partial: bool
    rank: int | None = None
    rank_low: int | None = None
    rank_high: int | None = None
    group: int | None = None
    mean_rank: float | None = None
    within_noise: int | None = None
    seed_low: int | None = None
    seed_high: int | None = None
    """The rank's range from the seed noise alone (the tasks fixed)."""

    @property
    def range_text(self) -> str:
        """``"2-7"``, or ``"1"`` when the range is one rank; ``"apart"`` for a partial row."""
        if self.rank_low is None or self.rank_high is None:
            return "apart"
        return f"{self.rank_low}" if self.rank_low == self.rank_high else f"{self.rank_low}-{self.rank_high}"


@dataclass(frozen=True)
class Ranking:
    """The full rows in rank order, then the partial rows by score; the tasks of the full rows; per alternative
    aggregation (``"mean rank"``, ``"within noise"``) its (Spearman, Kendall) correlation with the default order."""

    rows: list[Ranked]
    tasks: list[str]
    agreement: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def row(self, encoding: str) -> Ranked | None:
        return next((r for r in self.rows if r.encoding == encoding), None)

    @property
    def groups(self) -> list[list[str]]:
        """The tie groups of the full rows, in order."""
        out: dict[int, list[str]] = {}
        for r in self.rows:
            if r.group is not None:
                out.setdefault(r.group, []).append(r.encoding)
        return [out[g] for g in sorted(out)]


def cell_stats(per_seed: Mapping[int, float], sigma: float | None) -> tuple[float, float | None]:
    """(m, v): the mean over a cell's seeds and the variance of that mean (own seeds when >= 2, else sigma^2)."""
    values = [float(v) for v in per_seed.values()]
    m = sum(values) / len(values)
    if len(values) >= 2:
        return m, statistics.variance(values) / len(values)
    return m, None if sigma is None else sigma * sigma


def filled_sigmas(tasks: list[str], sigmas: Mapping[str, float | None]) -> dict[str, float | None]:
    """Each task's sigma, the median of the known ones where a task has none."""
    known = [float(s) for t in tasks if (s := sigmas.get(t)) is not None and math.isfinite(s)]
    fallback = statistics.median(known) if known else None
    return {t: sigmas[t] if sigmas.get(t) is not None else fallback for t in tasks}


def _interval(ms: list[float], vs: list[float | None]) -> tuple[float, float, float]:
    score = sum(ms) / len(ms)
    if any(v is None for v in vs):
        return score, score, score
    half = Z95 * math.sqrt(sum(vs)) / len(ms)  # type: ignore[arg-type]
    return score, score - half, score + half


def rank(per: PerSeed, sigmas: Mapping[str, float | None], replicates: int = REPLICATES, seed: int = SEED) -> Ranking:
    """The :class:`Ranking` of ``per`` (see the module's rules); ``sigmas`` maps a task to its measured seed sigma."""
    per = {e: {t: s for t, s in by_task.items() if s} for e, by_task in per.items()}
    per = {e: by_task for e, by_task in per.items() if by_task}
    all_tasks = sorted({t for by_task in per.values() for t in by_task})
    sig = filled_sigmas(all_tasks, sigmas)
    cells = {e: {t: cell_stats(s, sig[t]) for t, s in by_task.items()} for e, by_task in per.items()}
    full = sorted(e for e in cells if len(cells[e]) == len(all_tasks))
    partial = sorted(set(cells) - set(full))
    rows = {e: _row(e, cells[e], per[e], e in partial) for e in cells}
    if not full:
        return Ranking(sorted(rows.values(), key=lambda r: (-r.score, r.encoding)), all_tasks)
    M = np.array([[cells[e][t][0] for t in all_tasks] for e in full])
    V = np.array([[cells[e][t][1] or 0.0 for t in all_tasks] for e in full])
    order = sorted(range(len(full)), key=lambda i: (-M[i].mean(), full[i]))
    boot = _bootstrap(M, V, replicates, seed)
    ranks = _ranks(boot)
    seed_ranks = _ranks(_bootstrap(M, V, replicates, seed, resample_tasks=False))
    groups = _groups(boot, order)
    mean_rank = stats.rankdata(-M, axis=0).mean(axis=1)
    within = _within_noise(M, V)
    ranked = []
    for pos, i in enumerate(order, 1):
        lo, hi = np.quantile(ranks[:, i], [0.025, 0.975], method="inverted_cdf")
        s_lo, s_hi = np.quantile(seed_ranks[:, i], [0.025, 0.975], method="inverted_cdf")
        r = rows[full[i]]
        ranked.append(Ranked(r.encoding, r.score, r.low, r.high, r.n_tasks, r.seeds, False, pos, int(lo), int(hi),
                             groups[i], float(mean_rank[i]), int(within[i]), int(s_lo), int(s_hi)))  # fmt: skip
    ranked += sorted((rows[e] for e in partial), key=lambda r: (-r.score, r.encoding))
    agreement = {"mean rank": _agree(M.mean(axis=1), -mean_rank), "within noise": _agree(M.mean(axis=1), within)}
    return Ranking(ranked, all_tasks, agreement)


def _row(encoding: str, cells: Mapping[str, tuple[float, float | None]], per: Mapping[str, Mapping[int, float]],
         partial: bool) -> Ranked:  # fmt: skip
    score, low, high = _interval([m for m, _ in cells.values()], [v for _, v in cells.values()])
    return Ranked(encoding, score, low, high, len(cells), max(len(s) for s in per.values()), partial)


def _bootstrap(M: np.ndarray, V: np.ndarray, replicates: int, seed: int, resample_tasks: bool = True) -> np.ndarray:
    """(replicates, encodings): the aggregate of each encoding in each replicate (seed noise resampled, and the
    tasks unless ``resample_tasks`` is false)."""
    rng = np.random.default_rng(seed)
    n_enc, n_tasks = M.shape
    out = np.empty((replicates, n_enc))
    sd = np.sqrt(V)
    every = np.arange(n_tasks)
    for b in range(replicates):
        idx = rng.integers(0, n_tasks, n_tasks) if resample_tasks else every
        noisy = M[:, idx] + rng.standard_normal((n_enc, n_tasks)) * sd[:, idx]
        out[b] = noisy.mean(axis=1)
    return out


def _ranks(boot: np.ndarray) -> np.ndarray:
    """Each encoding's rank (1 = highest aggregate) in each replicate."""
    order = np.argsort(-boot, axis=1, kind="stable")
    ranks = np.empty_like(order)
    rows = np.arange(boot.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, boot.shape[1] + 1)
    return ranks


def _groups(boot: np.ndarray, order: list[int]) -> dict[int, int]:
    """Encoding index -> tie group (1 = the leaders'), going down ``order``."""
    groups: dict[int, int] = {}
    head, g = order[0], 1
    for i in order:
        if i != head and float(np.mean(boot[:, head] > boot[:, i])) >= BEYOND:
            head, g = i, g + 1
        groups[i] = g
    return groups


def _within_noise(M: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Per encoding, the number of tasks on which its cell is within noise of the task's best cell."""
    best = M.argmax(axis=0)
    cols = np.arange(M.shape[1])
    threshold = Z95 * np.sqrt(V[best, cols][None, :] + V)
    return ((M[best, cols][None, :] - M) <= threshold).sum(axis=1)


def _agree(default: np.ndarray, other: np.ndarray) -> tuple[float | None, float | None]:
    """(Spearman, Kendall) of two scorings of the same encodings (higher = better); None with fewer than 3."""
    if len(default) < 3 or np.ptp(other) == 0 or np.ptp(default) == 0:
        return None, None
    return float(stats.spearmanr(default, other).statistic), float(stats.kendalltau(default, other).statistic)
