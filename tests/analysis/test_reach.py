"""How far (:mod:`pebench.analysis.reach`) on hand-made normalised scores: contiguous reach, not learned, ties at
chance, a lower-is-better metric, several seeds averaged, missing lengths, the median over tasks, and on how many
tasks an encoding keeps its score up to 2x and 4x."""

import pytest

from pebench import metrics
from pebench.analysis import scoring
from pebench.analysis.reach import FRACTION, Reach, keeps, reach

ACC, PPL = metrics.get("accuracy"), metrics.get("perplexity")


def one_seed(by_length):
    return {L: [v] for L, v in by_length.items()}


def test_contiguous_reach_as_a_multiple_of_the_training_length():
    r = reach(one_seed({32: 1.0, 64: 1.0, 128: 0.95, 256: 0.9, 512: 0.5, 1024: 0.95}), 64)
    assert (r.length, r.multiple, r.text, r.reference) == (256, 4.0, "4×", 1.0)  # 1024 recovers, but 512 failed
    assert reach(one_seed({64: 1.0, 128: 0.89, 256: 1.0}), 64).text == "1×"  # fails at the first longer length
    assert reach(one_seed({64: 0.8, 128: 0.8 * FRACTION}), 64).text == "2×"  # exactly 90% qualifies
    assert reach(one_seed({64: 1.0}), 64).text == "1×"  # learned, no longer length evaluated
    assert reach(one_seed({64: 1.0, 96: 0.95, 128: 0.2}), 64).text == "1.5×"


def test_not_learned_in_distribution_has_no_reach():
    at_chance = reach(one_seed({64: 0.0, 128: 0.0, 256: 0.0}), 64)  # ties at chance: 0 >= 0.9 * 0, but not learned
    assert (at_chance.length, at_chance.text, at_chance.reference) == (None, "–", 0.0)
    assert not at_chance.learned and "not learned" in at_chance.tip
    assert reach(one_seed({64: 0.49, 128: 0.49}), 64).text == "–"  # below the learned threshold
    assert reach(one_seed({64: scoring.LEARNED, 128: scoring.LEARNED}), 64).text == "2×"
    # a learned model that falls to chance: ties at chance elsewhere do not qualify
    assert reach(one_seed({64: 1.0, 128: 0.0, 256: 0.0}), 64).text == "1×"


def test_no_score_in_distribution():
    r = reach(one_seed({128: 1.0, 256: 1.0}), 64)
    assert r == Reach(64) and r.text == "–" and r.reference is None
    assert reach({64: [None, None], 128: [1.0]}, 64).reference is None  # every seed errored at the training length
    # the training length not evaluated: the longest length below it is the reference
    assert reach(one_seed({32: 1.0, 128: 1.0, 256: 0.1}), 64).text == "2×"


def test_several_seeds_are_averaged():
    norms = {64: [1.0, 0.8], 128: [1.0, 0.7], 256: [0.9, 0.5]}  # means 0.9, 0.85, 0.7: 0.85 >= 0.81 > 0.7
    assert reach(norms, 64).text == "2×" and reach(norms, 64).reference == pytest.approx(0.9)
    # one seed errored (None) at 128: the other seed's score stands for the length
    assert reach({64: [1.0, 1.0], 128: [None, 0.95], 256: [0.5, 0.5]}, 64).text == "2×"
    # a diverged seed counts as chance (normalised 0) and pulls the mean down
    diverged = scoring.normalised(None, ACC, 0.5, status="diverged")
    assert reach({64: [1.0, 1.0], 128: [1.0, diverged]}, 64).text == "1×"


def test_missing_lengths_are_skipped():
    # 128 not run for this encoding (or every seed errored): 256 and 512 still count
    assert reach(one_seed({64: 1.0, 256: 0.95, 512: 0.92}), 64).text == "8×"
    assert reach({64: [1.0], 128: [None], 256: [0.95], 512: [0.3]}, 64).text == "4×"


def test_lower_is_better_through_the_normalisation():
    chance = 256.0  # uniform perplexity
    ppl = {64: 4.0, 128: 4.5, 256: 16.0, 512: 5.0}  # normalised 0.75, 0.729, 0.5, 0.71
    norms = {L: [scoring.normalised(p, PPL, chance)] for L, p in ppl.items()}
    r = reach(norms, 64)
    assert r.reference == pytest.approx(0.75) and r.text == "2×"  # 256 (0.5 < 0.675) ends it; 512 does not count
    assert reach({L: [scoring.normalised(p, PPL, chance)] for L, p in {64: 128.0, 128: 128.0}.items()}, 64).text == "–"


def test_keeps_counts_the_tasks_reaching_a_multiple():
    """The leaderboard's keeps 2x / 4x: the counts tell encodings apart where the median multiple (1x) did not."""
    tasks = [reach(one_seed(by_length), 64) for by_length in (
        {64: 1.0, 128: 1.0, 256: 0.95},  # 4x
        {64: 1.0, 128: 0.95, 256: 0.5},  # 2x
        {64: 1.0, 96: 0.95, 128: 0.2},  # 1.5x
        {64: 1.0, 128: 0.5, 256: 1.0},  # 1x: contiguous
        {64: 0.2, 128: 0.2, 256: 0.2},  # not learned, never counts
    )]  # fmt: skip
    assert [keeps(tasks, m) for m in (1, 1.5, 2, 4, 8)] == [4, 3, 2, 1, 0]
    assert keeps([], 2) == 0
    assert keeps([Reach(64)], 1) == 0  # not evaluated at the training length
