"""Across scale (issue 69): the two model sizes' orders compared on synthetic score tables whose answer is known --
Kendall's tau of the aggregates, its interval, per-task tau, who moved beyond the noise, and the leaders."""

import numpy as np
import pytest
from scipy import stats

from pebench.analysis.across_scale import across_scale, tau_b

TASKS = [f"t{j}" for j in range(8)]
ENCS = ["a", "b", "c", "d", "e", "f"]


def table(scores: dict[str, float], jitter: float = 0.0, seeds: int = 1, tasks: list[str] = TASKS) -> dict:
    """encoding -> task -> seed -> score: each encoding at its score on every task (plus a fixed, seeded jitter)."""
    rng = np.random.default_rng(7)
    return {e: {t: {s: v + jitter * float(rng.standard_normal()) for s in range(seeds)} for t in tasks}
            for e, v in scores.items()}  # fmt: skip


BASE = {e: 0.9 - 0.15 * i for i, e in enumerate(ENCS)}  # a > b > ... > f, 0.15 apart
SIGMAS = {t: 0.01 for t in TASKS}


def test_the_same_order_at_both_sizes_is_tau_one_and_nobody_moves():
    larger = {e: v + 0.05 for e, v in BASE.items()}  # every encoding better, the order unchanged
    out = across_scale(table(BASE, seeds=3, jitter=0.01), table(larger), SIGMAS)
    assert out is not None and out.encodings == ENCS and out.tasks == TASKS
    assert out.overall.tau == pytest.approx(1.0) and out.overall.low == pytest.approx(1.0)
    assert all(a.tau == pytest.approx(1.0) for a in out.per_task.values()) and len(out.per_task) == len(TASKS)
    assert [m.moved for m in out.moves] == [""] * 6 and [m.base_rank for m in out.moves] == [1, 2, 3, 4, 5, 6]
    assert out.leaders_stay and out.base.groups[0] == ["a"] == out.other.groups[0]


def test_one_swapped_pair_gives_the_known_tau_and_the_leader_that_fell_moved_down():
    larger = dict(BASE, a=BASE["f"] - 0.15)  # a falls from first to last: 5 discordant pairs of 15
    out = across_scale(table(BASE), table(larger), SIGMAS)
    assert out is not None
    assert out.overall.tau == pytest.approx((10 - 5) / 15)
    assert out.per_task["t0"].tau == pytest.approx((10 - 5) / 15)
    moved = {m.encoding: m.moved for m in out.moves}
    assert moved["a"] == "down" and (out.moves[0].base_rank, out.moves[0].other_rank) == (1, 6)
    assert all(moved[e] == "up" for e in "bcdef")  # each gained a rank, beyond noise 0.15 apart at sigma 0.01
    assert not out.leaders_stay and out.other.groups[0] == ["b"]


def test_within_the_noise_nothing_moved_and_the_interval_is_wide():
    close = {e: 0.5 + 0.002 * i for i, e in enumerate(ENCS)}  # 0.002 apart at sigma 0.05: all tied
    reversed_close = {e: 0.5 - 0.002 * i for i, e in enumerate(ENCS)}
    noisy = {t: 0.05 for t in TASKS}
    out = across_scale(table(close), table(reversed_close), noisy)
    assert out is not None and out.overall.tau == pytest.approx(-1.0)
    assert out.overall.low < -0.5 and out.overall.high > 0.5  # the reversal is inside the noise
    assert [m.moved for m in out.moves] == [""] * 6 and len(out.base.groups) == 1


def test_the_interval_is_deterministic():
    larger = dict(BASE, b=BASE["d"] - 0.01)
    a = across_scale(table(BASE, jitter=0.05), table(larger, jitter=0.05), {t: 0.05 for t in TASKS})
    b = across_scale(table(BASE, jitter=0.05), table(larger, jitter=0.05), {t: 0.05 for t in TASKS})
    assert a is not None and b is not None and a.overall == b.overall and a.per_task == b.per_task
    assert a.overall.low <= a.overall.tau <= a.overall.high  # a tau away from 1: inside its replicates' range
    assert a.overall.text == f"{a.overall.tau:.2f} [{a.overall.low:.2f}, {a.overall.high:.2f}]"


def test_only_the_encodings_and_tasks_both_sizes_hold_are_compared():
    base = table(BASE)
    base["z"] = {"t0": {0: 0.99}}  # at the default size only, one task
    other = table({e: v for e, v in BASE.items() if e != "f"}, tasks=TASKS[:5])
    out = across_scale(base, other, SIGMAS)
    assert out is not None and out.encodings == ["a", "b", "c", "d", "e"] and out.tasks == TASKS[:5]
    assert across_scale(table({"a": 0.5}), table({"a": 0.6}), SIGMAS) is None  # one encoding: no order to compare


def test_tau_b_matches_scipy_with_ties():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 3, (40, 7)).astype(float), rng.integers(0, 3, (40, 7)).astype(float)
    ours = tau_b(a, b)
    theirs = np.array([stats.kendalltau(x, y).statistic for x, y in zip(a, b, strict=True)])
    assert np.allclose(ours[np.isfinite(theirs)], theirs[np.isfinite(theirs)])
