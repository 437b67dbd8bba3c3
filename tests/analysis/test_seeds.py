"""``--seeds auto`` (issue 28, item 3): which cells need another seed, on small synthetic tasks whose answer is known
from the noise rule's numbers (sigma 0.05: a single-seed pair needs 1.96 * sqrt(2) * 0.05 = 0.139 between them)."""

from __future__ import annotations

import pytest

from pebench.analysis.seeds import undecided
from pebench.engine.runner import Case
from pebench.errors import PebenchError
from pebench.records.record import ResultRecord
from pebench.suite.adaptive import AdaptiveSeeds, SeedPlan

SIGMA = 0.05


def one_seed(**cells: tuple[float, float]) -> dict:
    """encoding -> (score at the training length 8, score at 16), seed 0."""
    return {enc: {8: {0: a}, 16: {0: b}} for enc, (a, b) in cells.items()}


def test_a_clear_winner_and_clear_calls_need_no_more_seeds():
    # alibi beats both at 8 and 16 beyond the noise; every in-distribution score is far from 0.1 and 0.5
    assert undecided(one_seed(alibi=(1.0, 0.9), rope=(0.75, 0.4), nope=(0.0, 0.0)), 8, SIGMA) == {}


def test_a_mark_within_the_noise_adds_a_seed_to_the_contenders_only():
    why = undecided(one_seed(alibi=(1.0, 0.9), rope=(0.95, 0.3), nope=(0.0, 0.0)), 8, SIGMA)
    assert set(why) == {"alibi", "rope"}  # 1.00 vs 0.95 at 8 is within 0.139; nope is beaten there
    assert "L8" in why["rope"] and "alibi" in why["rope"]


def test_a_learned_call_near_its_threshold_adds_a_seed():
    why = undecided(one_seed(alibi=(1.0, 0.9), rope=(0.55, 0.1), nope=(0.12, 0.0)), 8, SIGMA)
    assert set(why) == {"rope", "nope"}  # 0.55 within 1.96 * 0.05 of 0.5; 0.12 of 0.1
    assert "0.5 threshold" in why["rope"] and "0.1 threshold" in why["nope"]


def test_ties_at_the_ceiling_and_columns_nobody_carries_are_decided():
    # everyone at 1.00 in distribution (more seeds would not separate them); everyone at chance beyond it
    assert undecided(one_seed(alibi=(1.0, 0.01), rope=(1.0, 0.03), nope=(1.0, -0.02)), 8, SIGMA) == {}


def test_without_a_measured_spread_one_seed_decides_nothing_and_two_use_their_own():
    assert set(undecided(one_seed(alibi=(1.0, 0.9), rope=(0.0, 0.0)), 8, None)) == {"alibi", "rope"}
    two = {"alibi": {8: {0: 1.0, 1: 0.98}}, "rope": {8: {0: 0.0, 1: 0.02}}}
    assert undecided(two, 8, None) == {}  # t intervals separate; both far from a threshold with their own spread


def record(enc: str, length: int, seed: int, score: float) -> ResultRecord:
    return ResultRecord(case_id=f"{enc}-t-L{length}", encoding=enc, encoding_version="1", task="t", task_version="1",
                        train_length=8, eval_length=length, seed=seed, config={}, config_hash="h", score=score,
                        chance_level=0.0)  # fmt: skip


def test_adaptive_seeds_follow_the_rule_seed_by_seed_and_deterministically(monkeypatch):
    from pebench.analysis import noise

    monkeypatch.setattr(noise, "task_sigma", lambda task, config, data=None: SIGMA)
    scores = {("alibi", 0): 1.0, ("rope", 0): 0.95, ("nope", 0): 0.0, ("alibi", 1): 1.0, ("rope", 1): 0.7,
              ("alibi", 2): 1.0, ("rope", 2): 0.75}
    runs = []
    for _ in range(2):
        seeds = AdaptiveSeeds(SeedPlan(3, auto=True))
        ran = []
        for seed in range(3):  # seed-major, as the suite collects them
            for enc in ("alibi", "rope", "nope"):
                if seeds.reason(Case(enc, "t", 8, seed)) is None:
                    continue
                ran.append((enc, seed))
                seeds.add(record(enc, 8, seed, scores[(enc, seed)]))
        runs.append(ran)
    # seeds 1 and 2 only for the contenders (alibi, rope): with two seeds each side has its own t interval, and
    # rope's (0.95, 0.70) is too wide to separate; N = 3 caps them; nope, beaten from seed 0, keeps one seed
    assert runs[0] == [("alibi", 0), ("rope", 0), ("nope", 0), ("alibi", 1), ("rope", 1), ("alibi", 2), ("rope", 2)]
    assert runs[0] == runs[1]


@pytest.mark.parametrize(("text", "plan"), [("3", SeedPlan(3)), ("auto", SeedPlan(5, True)),
                                            ("auto:2", SeedPlan(2, True)), (1, SeedPlan(1))])  # fmt: skip
def test_seed_plans(text, plan):
    assert SeedPlan.parse(text) == plan


@pytest.mark.parametrize("text", ["0", "auto:0", "auto:x", "three", "-1", "3:auto"])
def test_bad_seed_plans_are_one_line(text):
    with pytest.raises(PebenchError, match="valid: a positive integer") as err:
        SeedPlan.parse(text)
    assert "\n" not in str(err.value)
