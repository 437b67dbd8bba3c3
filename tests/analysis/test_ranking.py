"""The leaderboard's order with its uncertainty (pebench.analysis.ranking) on synthetic references whose answer is
known: task-first aggregation, the propagated interval, rank ranges, tie groups, determinism, partial rows apart."""

import math

import numpy as np
import pytest

from pebench.analysis import ranking
from pebench.report import board

TASKS = [f"t{i}" for i in range(12)]


def field(means: dict[str, float], spread: float = 0.0, seeds: int = 1, jitter: float = 0.0) -> dict:
    """encoding -> task -> seed -> score: each encoding at its mean on every task, seeds spread by +-spread, tasks by
    a fixed pattern of +-jitter (the same for every encoding)."""
    pattern = [(-1) ** i * jitter for i in range(len(TASKS))]
    cells = list(zip(TASKS, pattern, strict=True))
    return {e: {t: {s: m + p + (s - (seeds - 1) / 2) * spread for s in range(seeds)} for t, p in cells}
            for e, m in means.items()}  # fmt: skip


def test_the_aggregate_is_per_task_first_with_partial_seeds():
    # task a has 3 seeds (mean 0.2), task b one seed (0.8): task first gives 0.5; seed first would give
    # seed 0: (0.1 + 0.8) / 2, seeds 1-2: 0.2 and 0.3 alone -> mean 0.35
    per = {"x": {"a": {0: 0.1, 1: 0.2, 2: 0.3}, "b": {0: 0.8}}, "y": {"a": {0: 0.5}, "b": {0: 0.5}}}
    r = ranking.rank(per, {"a": 0.1, "b": 0.1}).row("x")
    assert r.score == pytest.approx(0.5)
    # the interval: a's mean from its own 3 seeds (s = 0.1, var 0.01 / 3), b's single seed from sigma 0.1
    half = 1.959964 * math.sqrt(0.01 / 3 + 0.1**2) / 2
    assert (r.low, r.high) == pytest.approx((0.5 - half, 0.5 + half))
    assert r.seeds == 3


def test_far_apart_encodings_get_disjoint_rank_ranges_and_groups():
    per = field({"strong": 0.9, "weak": 0.1, "weaker": 0.05}, jitter=0.02)
    out = ranking.rank(per, dict.fromkeys(TASKS, 0.05))
    rows = {r.encoding: r for r in out.rows}
    assert [r.encoding for r in out.rows] == ["strong", "weak", "weaker"]
    assert (rows["strong"].rank_low, rows["strong"].rank_high) == (1, 1)
    assert rows["strong"].rank_high < rows["weak"].rank_low
    assert out.groups[0] == ["strong"]
    assert board.leader(out) == "strong"
    assert board.groups_text(out).startswith("strong leads beyond noise")


def test_encodings_within_noise_overlap_and_share_a_group():
    per = field({"a": 0.50, "b": 0.49, "c": 0.10}, jitter=0.05)
    out = ranking.rank(per, dict.fromkeys(TASKS, 0.2))
    rows = {r.encoding: r for r in out.rows}
    assert rows["a"].rank_high >= rows["b"].rank_low  # the ranges overlap
    assert rows["a"].range_text == "1-2" and rows["b"].range_text == "1-2"
    assert rows["a"].group == rows["b"].group == 1 and rows["c"].group == 2
    assert board.leader(out) is None
    assert board.groups_text(out).startswith("no encoding leads beyond noise: the first 2 (a, b)")


def test_own_seeds_narrow_the_interval_where_they_agree():
    noisy = field({"a": 0.5, "b": 0.4}, seeds=1)
    many = field({"a": 0.5, "b": 0.4}, seeds=3, spread=0.001)
    sig = dict.fromkeys(TASKS, 0.2)
    one, three = ranking.rank(noisy, sig).row("a"), ranking.rank(many, sig).row("a")
    assert three.high - three.low < (one.high - one.low) / 10


def test_the_bootstrap_is_deterministic():
    rng = np.random.default_rng(5)
    per = {f"e{i}": {t: {0: float(rng.uniform())} for t in TASKS} for i in range(8)}
    sig = dict.fromkeys(TASKS, 0.1)
    first, again = ranking.rank(per, sig), ranking.rank(per, sig)
    assert [(r.encoding, r.rank_low, r.rank_high, r.group) for r in first.rows] == [
        (r.encoding, r.rank_low, r.rank_high, r.group) for r in again.rows
    ]
    other = ranking.rank(per, sig, seed=1)
    assert [r.encoding for r in other.rows] == [r.encoding for r in first.rows]  # the order is the data's


def test_partial_encodings_are_ranked_apart():
    per = field({"a": 0.4, "b": 0.3})
    per["few"] = {"t0": {0: 1.0}, "t1": {0: 1.0}}
    out = ranking.rank(per, dict.fromkeys(TASKS, 0.05))
    assert [r.encoding for r in out.rows] == ["a", "b", "few"]  # below the ranked rows despite its 1.0
    few = out.row("few")
    assert few.partial and few.rank is None and few.range_text == "apart" and few.n_tasks == 2
    assert few.score == pytest.approx(1.0)
    assert out.tasks == sorted(TASKS)


def test_alternative_aggregations_and_their_agreement():
    # c wins most tasks by a little and loses one by a lot: first by mean rank, last by the mean score
    per = {"a": {t: {0: 0.5} for t in TASKS}, "b": {t: {0: 0.45} for t in TASKS},
           "c": {t: {0: 0.55 if t != "t0" else -2.0} for t in TASKS}}  # fmt: skip
    out = ranking.rank(per, dict.fromkeys(TASKS, 0.001))
    rows = {r.encoding: r for r in out.rows}
    assert [r.encoding for r in out.rows] == ["a", "b", "c"]
    assert rows["c"].mean_rank == pytest.approx((11 * 1 + 3) / 12)
    assert rows["a"].mean_rank == pytest.approx((11 * 2 + 1) / 12)
    assert rows["c"].within_noise == 11 and rows["a"].within_noise == 1 and rows["b"].within_noise == 0
    rho, tau = out.agreement["mean rank"]
    assert rho == pytest.approx(-0.5) and tau == pytest.approx(-1 / 3)


def test_a_task_without_a_measured_spread_takes_the_median_of_the_others():
    per = {"a": {"t0": {0: 0.5}, "t1": {0: 0.5}, "t2": {0: 0.5}}, "b": {"t0": {0: 0.1}, "t1": {0: 0.1},
                                                                       "t2": {0: 0.1}}}  # fmt: skip
    r = ranking.rank(per, {"t0": 0.1, "t1": 0.3, "t2": None}).row("a")
    assert r.high - r.low == pytest.approx(2 * 1.959964 * math.sqrt(0.1**2 + 0.3**2 + 0.2**2) / 3)


def test_the_seed_only_range_is_narrower_where_tasks_disagree():
    # a and b trade places task by task (tasks disagree) but each cell is exact: task resampling leaves the order
    # open, the seed noise alone does not
    per = {"a": {t: {0: 0.6 if i % 2 else 0.3, 1: 0.6 if i % 2 else 0.3} for i, t in enumerate(TASKS)},
           "b": {t: {0: 0.3 if i % 2 else 0.55, 1: 0.3 if i % 2 else 0.55} for i, t in enumerate(TASKS)}}  # fmt: skip
    out = ranking.rank(per, dict.fromkeys(TASKS, 0.1))
    a = out.row("a")
    assert (a.rank_low, a.rank_high) == (1, 2)
    assert (a.seed_low, a.seed_high) == (1, 1)
