import numpy as np
import pytest

from pebench.analysis.stats import estimate, iqm


def test_iqm_trims_a_quarter_each_side():
    # 8 values sorted -50 1 2 3 4 5 6 100: drop the 2 lowest and 2 highest, mean of 2, 3, 4, 5
    assert iqm([100, 1, 2, 3, 4, 5, 6, -50]) == pytest.approx(3.5)
    assert iqm([1, 2, 3, 4]) == pytest.approx(2.5)


def test_single_value_has_a_degenerate_interval():
    e = estimate([0.7])
    assert (e.mean, e.low, e.high, e.n, e.iqm) == (0.7, 0.7, 0.7, 1, None)


def test_interval_contains_the_mean_and_shrinks_with_more_seeds():
    rng = np.random.default_rng(1)
    few = estimate(list(rng.normal(0.5, 0.1, 5)))
    many = estimate(list(rng.normal(0.5, 0.1, 200)))
    assert few.low <= few.mean <= few.high and many.low <= many.mean <= many.high
    assert (many.high - many.low) < (few.high - few.low)
    assert 0.45 < many.mean < 0.55 and many.low < 0.5 < many.high
    assert few.iqm is not None


def test_overlap_and_non_finite_values_dropped():
    a = estimate([0.1, 0.12, 0.11, 0.13])
    b = estimate([0.9, 0.91, 0.92, 0.9, float("nan")])
    assert b.n == 4 and not a.overlaps(b) and a.overlaps(a)
    with pytest.raises(ValueError):
        estimate([float("nan")])
