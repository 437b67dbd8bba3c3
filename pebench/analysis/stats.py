"""Aggregates over seeds: mean with a bootstrap confidence interval, the interquartile mean, and a Student-t interval.

The bootstrap is the bias-corrected and accelerated (BCa) interval of :func:`scipy.stats.bootstrap` (Efron 1987);
the interquartile mean (IQM) is the mean of the middle 50% of the values, recommended for few-run deep-learning
comparisons by Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical Precipice", NeurIPS 2021.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Estimate:
    """Mean of ``n`` values with a ``confidence`` interval [low, high] (equal to the mean when n == 1) and the IQM
    (None when n < 4)."""

    mean: float
    low: float
    high: float
    n: int
    iqm: float | None = None
    confidence: float = 0.95

    def overlaps(self, other: Estimate) -> bool:
        return self.low <= other.high and other.low <= self.high


def iqm(values: Sequence[float]) -> float:
    """Interquartile mean: the mean of the values between the 25th and 75th percentiles (trimmed 25% each side)."""
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        raise ValueError("iqm of no values")
    cut = int(math.floor(0.25 * x.size))
    return float(x[cut : x.size - cut].mean())


def estimate(values: Sequence[float], confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """Mean, bootstrap CI (BCa; percentile when BCa is undefined) and IQM (n >= 4) of finite ``values``."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        raise ValueError("estimate of no finite values")
    mean = float(x.mean())
    if x.size == 1 or np.all(x == x[0]):
        return Estimate(mean, mean, mean, int(x.size), iqm(x) if x.size >= 4 else None, confidence)
    from scipy.stats import bootstrap

    rng = np.random.default_rng(seed)
    low = high = float("nan")
    for method in ("BCa", "percentile"):
        res = bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples, method=method,
                        random_state=rng)  # fmt: skip
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            break
    return Estimate(mean, min(low, mean), max(high, mean), int(x.size), iqm(x) if x.size >= 4 else None, confidence)


@lru_cache(maxsize=64)
def _t_quantile(dof: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, dof))


def t_interval(values: Sequence[float]) -> tuple[float, float | None, int]:
    """Mean, half-width of the Student-t 95% interval (None for fewer than 2 values), and n of the finite values
    (cheap enough for the thousands of cells of a report)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        raise ValueError("t_interval of no finite values")
    if x.size < 2:
        return float(x.mean()), None, 1
    half = _t_quantile(x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return float(x.mean()), half, int(x.size)
