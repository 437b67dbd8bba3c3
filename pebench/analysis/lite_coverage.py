"""Does the lite tier's interval cover a run as it was run? Leave-one-encoding-out coverage of single-seed (or
n-seed) predictions, the interval factor that calibrates it, and the choices of tasks that trade minutes for
agreement and coverage (issue 90; studies/lite/README.md).

A :class:`Choice` says how a lite tier is chosen from the reference: a budget of a run's training minutes (its seeds
times ALiBi's minutes of the chosen tasks), the seeds a run has, and whether the selection penalises each task's seed
noise (:func:`pebench.analysis.lite.greedy`'s ``noise``: sum_t w_t^2 sigma_t^2 / n added to the LOO error) or keeps
to the tasks whose seed spread is at most the median (``steady``).

:func:`validate` holds each encoding out in turn: the tasks are chosen and the map fitted on the others, the
interval's residuals are the others' own leave-one-out residuals (a nested loop, so the held-out encoding never
shapes its interval), the seed spread ``sigma_t`` is pooled over the others, and the interval factor ``c`` is
calibrated on the others (:func:`calibrate`). Every held-out encoding with at least two seeds on the chosen tasks is
then predicted from each combination of ``n`` of its seeds, and the coverage is the share of those predictions
whose 90% interval (:func:`pebench.analysis.lite.half_widths`) holds its measured full score.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pebench.analysis.lite import agreement, fit, greedy, half_widths, seed_noise, seed_sd

if TYPE_CHECKING:
    import pandas as pd

PerSeed = Mapping[str, Mapping[str, Mapping[int, float]]]
"""encoding -> task -> seed -> OOD normalised score (the mean over the task's OOD lengths, at the chosen rate)."""

COVERAGE = 0.9
"""The interval's stated coverage; the calibrated factor widens it until this share of the calibration runs holds."""


@dataclass(frozen=True)
class Choice:
    """How a lite tier is chosen: within ``budget`` minutes of a run's training (``seeds`` x ALiBi's stored minutes
    of the tasks, one thread, both learning rates), ``penalise``: the selection's error adds the run's seed noise
    through the map's weights, ``steady``: only tasks whose seed spread is at most the median task's."""

    budget: float
    seeds: int = 1
    penalise: bool = False
    steady: bool = False

    @property
    def label(self) -> str:
        kind = "seed noise penalised" if self.penalise else "less seed spread" if self.steady else "current rule"
        return f"{kind}, {self.seeds} seed{'s' if self.seeds > 1 else ''}"


@dataclass
class Reference:
    """The reference's full-coverage encodings: ``table`` (encodings x tasks, OOD score, mean over seeds),
    ``per_seed`` (:data:`PerSeed`) and ``cost`` (ALiBi's training minutes per task, in ``table``'s column order)."""

    table: pd.DataFrame
    per_seed: PerSeed
    cost: np.ndarray

    @property
    def scores(self) -> np.ndarray:
        return self.table.to_numpy()

    @property
    def full(self) -> np.ndarray:
        return self.table.mean(axis=1).to_numpy()

    def spread(self, rows: np.ndarray) -> np.ndarray:
        """Each task's pooled seed sd (:func:`pebench.analysis.lite.seed_sd`) over the encodings ``rows``."""
        names = [str(self.table.index[i]) for i in rows]
        sd = seed_sd({e: self.per_seed[e] for e in names}, [str(t) for t in self.table.columns])
        return np.array([sd[str(t)] for t in self.table.columns])


@dataclass
class Fold:
    """A map chosen and fitted on some encodings: task columns, intercept, weights, and the tasks' seed sd."""

    order: list[int]
    intercept: float
    weights: np.ndarray
    sd: np.ndarray

    def noise(self, seeds: int) -> float:
        """The seed noise of an n-seed run's prediction: sqrt(sum_t w_t^2 sigma_t^2 / n)."""
        keys = [str(j) for j in range(len(self.order))]
        return seed_noise(dict(zip(keys, self.weights, strict=True)), dict(zip(keys, self.sd, strict=True)), seeds)


def choose(ref: Reference, rows: np.ndarray, choice: Choice) -> Fold:
    """The tasks ``choice`` picks on the encodings ``rows`` and the map fitted there."""
    scores, full, sd = ref.scores[rows], ref.full[rows], ref.spread(rows)
    cost = ref.cost * choice.seeds
    if choice.steady:
        cost = np.where(sd <= np.nanmedian(sd), cost, np.inf)
    noise = np.nan_to_num(sd) ** 2 / choice.seeds if choice.penalise else None
    order = greedy(scores, full, cost, choice.budget, noise=noise)
    intercept, weights = fit(scores[:, order], full)
    return Fold(order, intercept, weights, np.nan_to_num(sd[order]))


def runs(ref: Reference, i: int, fold: Fold, seeds: int) -> list[tuple[tuple[int, ...], float]]:
    """(seeds, prediction) for each combination of ``seeds`` of encoding ``i``'s seeds that every chosen task has;
    none when it has fewer than two such seeds (a single seed is already the reference's own score)."""
    per = ref.per_seed[str(ref.table.index[i])]
    tasks = [str(ref.table.columns[j]) for j in fold.order]
    common = sorted(set.intersection(*(set(per[t]) for t in tasks))) if tasks else []
    if len(common) < max(2, seeds):
        return []
    out = []
    for combo in itertools.combinations(common, seeds):
        x = np.array([np.mean([per[t][s] for s in combo]) for t in tasks])
        out.append((combo, float(fold.intercept + x @ fold.weights)))
    return out


def residuals(ref: Reference, rows: np.ndarray, choice: Choice) -> tuple[np.ndarray, list[Fold]]:
    """Leave-one-out over ``rows``: each one's residual (actual - predicted) by the map chosen on the rest, and
    those maps."""
    folds = [choose(ref, np.delete(rows, k), choice) for k in range(len(rows))]
    pairs = zip(rows, folds, strict=True)
    res = np.array([ref.full[i] - (f.intercept + ref.scores[i, f.order] @ f.weights) for i, f in pairs])
    return res, folds


def standardised(error: float, below: float, above: float) -> float:
    """An error (actual - predicted) in units of the interval's reach on its side: covered when at most 1."""
    reach = above if error > 0 else below
    return abs(error) / reach if reach > 0 else 0.0 if error == 0 else float("inf")


def calibrate(ref: Reference, rows: np.ndarray, choice: Choice, res: np.ndarray, folds: list[Fold]) -> float:
    """The interval factor c >= 1 of the encodings ``rows`` (their LOO residuals ``res`` and maps ``folds``): the
    :data:`COVERAGE` quantile of each multi-seed encoding's run errors in units of its uncalibrated interval (its
    map's noise, the residuals of the others), so that c widens an interval that covers too little, never narrows."""
    z = []
    for k, (i, fold) in enumerate(zip(rows, folds, strict=True)):
        found = runs(ref, i, fold, choice.seeds)
        if found:
            below, above = half_widths(np.delete(res, k), fold.noise(choice.seeds))
            z += [standardised(ref.full[i] - p, below, above) for _, p in found]
    return max(1.0, float(np.quantile(z, COVERAGE))) if z else 1.0


def validate(ref: Reference, choice: Choice, ranges: Mapping[str, tuple[int, int]] | None = None) -> dict:
    """Leave-one-encoding-out agreement (:func:`pebench.analysis.lite.agreement`) and coverage of ``choice``:
    ``coverage`` the share of held-out n-seed predictions whose calibrated interval holds the measured full score,
    ``coverage_map_only`` the same of the residuals' interval alone (the interval before issue 90),
    ``coverage_mutual`` how often one run's prediction falls inside another's interval (pairs of disjoint seeds of
    the same encoding, both orders; ``coverage_mutual_map_only`` with the residuals' interval), ``predictions`` how
    many runs counted, the mean noise, width and factor, and ``per_run`` each run's prediction and interval."""
    n = len(ref.table)
    predicted = np.zeros(n)
    covered, map_only, mutual, mutual_map, widths, noises, factors = [], [], [], [], [], [], []
    per_run = []
    for i in range(n):
        rest = np.delete(np.arange(n), i)
        fold = choose(ref, rest, choice)
        predicted[i] = fold.intercept + ref.scores[i, fold.order] @ fold.weights
        found = runs(ref, i, fold, choice.seeds)
        if not found:
            continue
        res, inner = residuals(ref, rest, choice)
        factor = calibrate(ref, rest, choice, res, inner)
        noise = fold.noise(choice.seeds)
        below, above = half_widths(res, noise, factor)
        plain = half_widths(res, 0.0)
        for seeds, p in found:
            per_run.append({"encoding": str(ref.table.index[i]), "seeds": list(seeds), "predicted": round(p, 4),
                            "low": round(p - below, 4), "high": round(p + above, 4),
                            "actual": round(float(ref.full[i]), 4)})  # fmt: skip
            covered.append(p - below <= ref.full[i] <= p + above)
            map_only.append(p - plain[0] <= ref.full[i] <= p + plain[1])
            widths.append(below + above)
        pairs = [(p, q) for (a, p), (b, q) in itertools.permutations(found, 2) if not set(a) & set(b)]
        mutual += [p - below <= q <= p + above for p, q in pairs]
        mutual_map += [p - plain[0] <= q <= p + plain[1] for p, q in pairs]
        noises.append(noise)
        factors.append(factor)
    out = agreement(predicted, ref.full, [str(e) for e in ref.table.index], ranges)
    return out | {"coverage": _share(covered), "coverage_map_only": _share(map_only), "coverage_mutual": _share(mutual),
                  "coverage_mutual_map_only": _share(mutual_map), "predictions": len(covered),
                  "mutual_pairs": len(mutual), "held_out": len(noises), "noise": _mean(noises),
                  "width": _mean(widths), "factor": _mean(factors), "per_run": per_run}  # fmt: skip


def shipped(ref: Reference, choice: Choice) -> tuple[Fold, dict[str, float], float, np.ndarray]:
    """The tier ``choice`` picks on every encoding: its map, the seed sd of its tasks (pooled over every encoding
    with several seeds), its interval factor (:func:`calibrate` over every encoding) and the LOO residuals."""
    rows = np.arange(len(ref.table))
    fold = choose(ref, rows, choice)
    res, folds = residuals(ref, rows, choice)
    sd = {str(ref.table.columns[j]): float(s) for j, s in zip(fold.order, fold.sd, strict=True)}
    return fold, sd, calibrate(ref, rows, choice, res, folds), res


def _share(values: list[bool]) -> float | None:
    return float(np.mean(values)) if values else None


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None
