"""The lite tier (``--tier lite``): a few tasks whose results predict an encoding's full aggregate, chosen from the
shipped reference (studies/lite/README.md; issue 66).

The full score of an encoding is the mean over every task of its out-of-distribution normalised score (each cell at
its chosen learning rate, mean over seeds first). A ridge regression (one weight a task, :data:`RIDGE`) maps the lite
tasks' scores to it; the tasks are chosen by greedy forward selection on the regression's leave-one-out error within
a budget of training time (:func:`greedy`), validated leave-one-encoding-out (:func:`validate`). The chosen tasks, the
fitted map, the validation's residuals, each lite task's seed spread and the reference's full scores ship in
``pebench/data/lite.json`` (:func:`load`), derived by ``python studies/lite/choose.py --write``; :func:`predict` turns
a run's lite results into a predicted full score and rank, marked as predicted.

The prediction's 90% interval holds two errors (issue 90): the map's, the 5th and 95th percentiles ``r05``, ``r95`` of
the leave-one-encoding-out residuals, and the run's own seed noise, the standard deviation of the map's output over
the run's seeds (:func:`seed_noise`)::

    s = sqrt(sum_t w_t^2 sigma_t^2 / n_t)
    low = p - c * sqrt(r05^2 + (Z90 * s)^2),   high = p + c * sqrt(r95^2 + (Z90 * s)^2)

with ``w_t`` the map's weight of lite task ``t``, ``sigma_t`` its seed-to-seed standard deviation of one seed's OOD
score on the map's scale (:func:`seed_sd`, from the reference's own per-seed results), ``n_t`` the run's seeds on it
and ``c >= 1`` the interval factor calibrated leave-one-encoding-out (:mod:`pebench.analysis.lite_coverage`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pebench.errors import PebenchError

if TYPE_CHECKING:
    import pandas as pd

LITE_FILE = Path(__file__).resolve().parents[1] / "data" / "lite.json"


RIDGE = 0.01
"""The ridge penalty of the map's task weights (not its intercept): tried 1e-6, 0.01, 0.05 (tau 0.78-0.83 at 3-5
tasks, 0.01 the best or tied)."""

Z90 = 1.6448536
"""The two-sided 90% point of a normal (its 5th and 95th percentiles): the seed noise's part of the interval."""


def loo_error(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> float:
    """Leave-one-out mean squared error of the ridge fit y ~ a + x w (``x`` (n, k); closed form by the hat
    matrix)."""
    design = np.column_stack([np.ones(len(y)), x])
    penalty = np.eye(design.shape[1]) * ridge
    penalty[0, 0] = 1e-12
    hat = design @ np.linalg.solve(design.T @ design + penalty, design.T)
    lev = np.clip(np.diag(hat), 0, 1 - 1e-9)
    return float(np.mean(((y - hat @ y) / (1 - lev)) ** 2))


def fit(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> tuple[float, np.ndarray]:
    """The ridge fit of y ~ a + x w: (a, w)."""
    design = np.column_stack([np.ones(len(y)), x])
    penalty = np.eye(design.shape[1]) * ridge
    penalty[0, 0] = 1e-12
    w = np.linalg.solve(design.T @ design + penalty, design.T @ y)
    return float(w[0]), w[1:]


def fit_predict(x: np.ndarray, y: np.ndarray, new: np.ndarray, ridge: float = RIDGE) -> float:
    """The ridge fit of y ~ a + x w evaluated at ``new`` (k,)."""
    a, w = fit(x, y, ridge)
    return float(a + new @ w)


def greedy(scores: np.ndarray, full: np.ndarray, cost: np.ndarray, budget: float, most: int = 8,
           noise: np.ndarray | None = None) -> list[int]:  # fmt: skip
    """Tasks (columns of ``scores``) chosen by forward selection on the LOO error, each step among the tasks that
    keep the summed ``cost`` within ``budget``, while the error falls (at most ``most``). With ``noise`` (per task,
    the variance of a run's score on it, sigma_t^2 / n) the error of a set L is the LOO error plus the run's seed
    noise through its fitted weights, sum_{t in L} w_t^2 noise_t: tasks whose seeds disagree are penalised."""

    def error(columns: list[int]) -> float:
        mse = loo_error(scores[:, columns], full)
        return mse if noise is None else mse + float(np.sum(fit(scores[:, columns], full)[1] ** 2 * noise[columns]))

    chosen: list[int] = []
    best_error = float(np.var(full)) * len(full) / (len(full) - 1)  # the intercept alone
    while len(chosen) < most:
        fits = [j for j in range(scores.shape[1]) if j not in chosen and cost[[*chosen, j]].sum() <= budget]
        if not fits:
            break
        j = min(fits, key=lambda c: error([*chosen, c]))
        value = error([*chosen, j])
        if value >= best_error:
            break
        chosen, best_error = [*chosen, j], value
    return chosen


def seed_sd(per_seed: Mapping[str, Mapping[str, Mapping[int, float]]], tasks: list[str]) -> dict[str, float]:
    """Each task's seed-to-seed standard deviation of one seed's OOD score (encoding -> task -> seed -> score, the
    map's scale): the pooled sd sqrt(mean_e var_e) over the encodings with at least two seeds on it (var with
    ddof 1); NaN where none has."""
    out = {}
    for task in tasks:
        variances = [float(np.var(list(v[task].values()), ddof=1))
                     for v in per_seed.values() if len(v.get(task, {})) > 1]  # fmt: skip
        out[task] = float(np.sqrt(np.mean(variances))) if variances else float("nan")
    return out


def seed_noise(weights: Mapping[str, float], sd: Mapping[str, float], seeds: int | Mapping[str, int] = 1) -> float:
    """The standard deviation of the map's output over a run's seeds: sqrt(sum_t w_t^2 sigma_t^2 / n_t), ``seeds``
    the run's seeds on every task (or per task)."""
    n = {t: seeds if isinstance(seeds, int) else seeds[t] for t in weights}
    return float(np.sqrt(sum(weights[t] ** 2 * sd[t] ** 2 / max(1, n[t]) for t in weights)))


def half_widths(residuals: np.ndarray | list[float], noise: float, factor: float = 1.0) -> tuple[float, float]:
    """The interval's reach below and above a prediction: c * sqrt(r05^2 + (Z90 s)^2) and c * sqrt(r95^2 +
    (Z90 s)^2), r05 and r95 the 5th and 95th percentiles of the map's residuals (actual - predicted), s the seed
    noise (:func:`seed_noise`), c the calibrated factor."""
    r05, r95 = np.percentile(np.asarray(residuals, dtype=float), [5, 95])
    below = factor * float(np.hypot(max(0.0, -r05), Z90 * noise))
    return below, factor * float(np.hypot(max(0.0, r95), Z90 * noise))


def validate(table: pd.DataFrame, cost: np.ndarray, budget: float,
             ranges: Mapping[str, tuple[int, int]] | None = None) -> dict:  # fmt: skip
    """Leave-one-encoding-out validation of the lite tier chosen within ``budget`` minutes of ALiBi's training;
    with ``ranges`` (encoding -> the full ranking's 95% rank range, :mod:`pebench.analysis.ranking`) also the share
    of encodings whose predicted rank is within 3 of the actual one or inside that range (the issue's target)."""
    import pandas as pd

    scores, full = table.to_numpy(), table.mean(axis=1).to_numpy()
    n = len(table)
    predicted, folds = np.zeros(n), []
    for i in range(n):
        keep = np.arange(n) != i
        order = greedy(scores[keep], full[keep], cost, budget)
        predicted[i] = fit_predict(scores[keep][:, order], full[keep], scores[i, order])
        folds.append(order)
    counts = pd.Series([table.columns[j] for fold in folds for j in fold]).value_counts()
    out = agreement(predicted, full, list(table.index), ranges)
    per_encoding = out.pop("per_encoding")
    return out | {"folds_choosing": {t: int(c) for t, c in counts.items()}, "per_encoding": per_encoding}


def agreement(predicted: np.ndarray, full: np.ndarray, names: list[str],
              ranges: Mapping[str, tuple[int, int]] | None = None) -> dict:  # fmt: skip
    """How held-out predictions agree with the actual full scores: Kendall's tau, Spearman, RMSE, the rank errors
    (each prediction ranked among the others' actual scores) and, with ``ranges``, the share within 3 ranks or inside
    the full ranking's own rank range; ``per_encoding`` the numbers behind them."""
    from scipy import stats  # here, not at the top: scipy.stats would add a second to every suite's start

    n = len(full)
    actual_rank = stats.rankdata(-full)
    ranks = np.array([1 + np.sum(np.delete(full, i) > predicted[i]) for i in range(n)])  # among the others' actual
    errors = np.abs(ranks - actual_rank)
    inside = [ranges[e][0] <= ranks[i] <= ranges[e][1] for i, e in enumerate(names)] if ranges else None
    extra = {} if inside is None else {"within_3_or_range": float(np.mean((errors <= 3) | np.asarray(inside)))}
    tau, rho = float(stats.kendalltau(predicted, full)[0]), float(stats.spearmanr(predicted, full)[0])
    return extra | {"tau": tau, "spearman": rho,
            "rmse": float(np.sqrt(np.mean((predicted - full) ** 2))), "median_rank_error": float(np.median(errors)),
            "worst_rank_error": float(errors.max()), "within_3": float(np.mean(errors <= 3)),
            "per_encoding": {e: {"actual": round(float(full[i]), 4), "predicted": round(float(predicted[i]), 4),
                                 "rank": int(actual_rank[i]), "predicted_rank": int(ranks[i])}
                             for i, e in enumerate(names)}}  # fmt: skip


def inputs_digest(df: pd.DataFrame) -> str:
    """SHA-256 of the reference results the lite tier is derived from (encoding, task, seed, lengths, status, score,
    run): a test compares it with the shipped reference, so a changed reference cannot keep an old lite tier."""
    cols = ["encoding", "task", "seed", "train_length", "eval_length", "status", "score", "run_id", "case_id"]
    rows = df[cols].sort_values(cols[:5] + ["case_id", "run_id"]).astype(str).to_numpy().tolist()
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:32]


def load(path: Path = LITE_FILE) -> dict[str, Any]:
    """The shipped lite tier: tasks, weights, intercept, residuals, the tasks' seed spread (``seed_sd``) and the
    interval factor, the reference's full scores, validation, provenance."""
    return json.loads(path.read_text())


def lite_tasks(names: list[str], lite: Mapping[str, Any] | None = None) -> list[str]:
    """``--tier lite``: of the tasks ``names``, the lite tier's, in its order; a one-line error when none is."""
    tasks = (lite or load())["tasks"]
    chosen = [t for t in tasks if t in names]
    if not chosen:
        raise PebenchError(f"--tier lite runs the tasks {', '.join(tasks)}; --task names none of them")
    return chosen


@dataclass
class Prediction:
    """An encoding's full score predicted from its lite results, with its 90% interval (the map's error and the
    run's seed noise over ``seeds`` seeds, see the module) and the rank (and rank range) it gives among the
    reference's encodings."""

    score: float
    low: float
    high: float
    rank: int
    rank_low: int
    rank_high: int
    of: int
    seeds: int = 1
    """The run's seeds on its lite tasks (the fewest of any task)."""
    noise: float = 0.0
    """The run's seed noise in the predicted score (:func:`seed_noise`); 0 with a map that ships no seed spread."""

    def holds(self) -> str:
        """What the interval holds, in one clause."""
        seeds = f"{self.seeds} seed{'s' if self.seeds != 1 else ''}"
        return f"90% interval: the map's error and this run's seed noise, {seeds}" if self.noise > 0 else \
            "90% interval: the map's error"  # fmt: skip

    def text(self) -> str:
        return (f"predicted full OOD score {self.score:.3f} [{self.low:.3f}, {self.high:.3f}] ({self.holds()}), rank "
                f"{self.rank} [{self.rank_low}-{self.rank_high}] of {self.of} reference encodings + yours")


def predict(per_task: Mapping[str, float], lite: Mapping[str, Any] | None = None, exclude: str | None = None,
            seeds: int | Mapping[str, int] = 1) -> Prediction | None:  # fmt: skip
    """The prediction of an encoding whose lite tasks scored ``per_task`` (OOD normalised, mean over ``seeds``
    seeds, or per task); None when a lite task is missing. ``exclude``: a reference encoding of the same name left
    out of the ranking. The interval: the module's formula with the shipped ``seed_sd`` and ``interval_factor`` (a
    map without them: the residuals' percentiles alone)."""
    lite = lite or load()
    if any(t not in per_task for t in lite["tasks"]):
        return None
    weights = {t: float(lite["weights"][t]) for t in lite["tasks"]}
    score = lite["intercept"] + sum(weights[t] * per_task[t] for t in lite["tasks"])
    n = {t: seeds if isinstance(seeds, int) else int(seeds.get(t, 1)) for t in lite["tasks"]}
    noise = seed_noise(weights, lite["seed_sd"], n) if "seed_sd" in lite else 0.0
    below, above = half_widths(lite["residuals"], noise, float(lite.get("interval_factor", 1.0)))
    low, high = score - below, score + above
    score, low, high = (min(1.0, max(0.0, v)) for v in (score, low, high))  # a normalised score's range
    others = np.asarray([v for e, v in lite["reference_scores"].items() if e != exclude])

    def rank(value: float) -> int:
        return int(1 + np.sum(others > value))

    return Prediction(float(score), float(low), float(high), rank(score), rank(high), rank(low), len(others),
                      min(n.values()), noise)  # fmt: skip
