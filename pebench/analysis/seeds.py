"""Seeds where they decide (``--seeds auto``): which cells of a task need another seed.

A run with ``--seeds auto:N`` trains seed 0 of every cell (encoding, task), then adds seed k (k = 1 .. N-1) only to
the cells whose verdicts the noise rule (:mod:`pebench.analysis.noise`) still leaves open after seeds 0 .. k-1 of the
whole task. A cell's verdicts are open (:func:`undecided`) when, on normalised scores (0 = chance, 1 = perfect), one
value per seed:

1. **learned call near its threshold** -- its in-distribution score ``m`` (per seed the mean over the lengths up to
   the training length, then the mean over its ``n`` seeds) is within the noise of a threshold of
   :func:`pebench.analysis.scoring.learned_verdict` (0.5 learned, 0.1 partly): ``|m - t| <= 1.96 * s / sqrt(n)``,
   ``s`` the task's measured seed spread ``sigma`` (or, without one, the cell's own standard deviation over two or
   more seeds);
2. **a column's mark within the noise** -- at an evaluated length no encoding is marked best
   (:func:`pebench.analysis.noise.marked_best`), and the cell is a contender: the best mean, or one the best does not
   beat beyond the noise. Two exceptions close a column without a mark: every contender equals the best at the
   shown precision (two decimals of the normalised score: a tie more seeds would not break, e.g. several at 1.00), or
   the best mean is below the *partly* threshold (no encoding carries the task at that length: which one is least
   bad is not a verdict).

Without a measured spread for the run's protocol (:func:`pebench.analysis.noise.task_sigma`) a single seed decides
nothing, so every cell gets its second seed; from two seeds on a cell's own spread is used. The rule reads only the
results of seeds below k, so the same database and options give the same seeds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pebench.analysis.noise import Z95, beyond_noise, marked_best
from pebench.analysis.scoring import LEARNED, PARTLY, finite

THRESHOLDS = (LEARNED, PARTLY)
"""The learned and partly thresholds of :func:`pebench.analysis.scoring.learned_verdict`."""
TIE_DIGITS = 2
"""A contender equal to the best at this many decimals of the normalised score is tied with it for good."""


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _sd(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    m = _mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def _near_threshold(values: Sequence[float], sigma: float | None) -> str | None:
    """Why the learned call of per-seed values ``values`` is open, or None."""
    m, n = _mean(values), len(values)
    s = sigma if sigma is not None else _sd(values)
    if s is None:
        return f"in-distribution {m:.2f} from one seed, no measured seed spread"
    for t in THRESHOLDS:
        if abs(m - t) <= Z95 * s / math.sqrt(n):
            return f"in-distribution {m:.2f} within the noise of the {t:g} threshold"
    return None


def undecided(
    scores: Mapping[str, Mapping[int, Mapping[int, float | None]]], train_length: int, sigma: float | None
) -> dict[str, str]:
    """The cells of one task whose verdicts are open (see the module docstring): encoding -> why (one line).

    ``scores``: encoding -> evaluated length -> seed -> normalised score (None: no score, e.g. an error)."""
    why: dict[str, str] = {}
    encs = sorted(scores)
    for enc in encs:  # 1. learned calls near a threshold
        by_seed: dict[int, list[float]] = {}
        for length, seeds in scores[enc].items():
            if length <= train_length:
                for seed, v in seeds.items():
                    if finite(v):
                        by_seed.setdefault(seed, []).append(float(v))  # type: ignore[arg-type]
        per_seed = [_mean(v) for _, v in sorted(by_seed.items())]
        if per_seed and (reason := _near_threshold(per_seed, sigma)) is not None:
            why[enc] = reason
    lengths = sorted({length for enc in encs for length in scores[enc]})
    for length in lengths:  # 2. columns without a mark
        samples = [[float(v) for v in scores[enc].get(length, {}).values() if finite(v)] for enc in encs]
        present = [i for i, s in enumerate(samples) if s]
        if len(present) < 2 or any(marked_best(samples, sigma)):
            continue
        top = max(present, key=lambda i: _mean(samples[i]))
        best = _mean(samples[top])
        if best < THRESHOLDS[1]:
            continue  # nobody carries the task at this length
        rivals = [j for j in present if j != top and not beyond_noise(samples[top], samples[j], sigma)]
        open_rivals = [j for j in rivals if round(_mean(samples[j]), TIE_DIGITS) != round(best, TIE_DIGITS)]
        if not open_rivals:
            continue
        for j in [top, *open_rivals]:
            other = encs[open_rivals[0]] if j == top else encs[top]
            why.setdefault(encs[j], f"L{length}: {_mean(samples[j]):.2f} within the noise of {other}")
    return why
