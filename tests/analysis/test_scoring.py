"""The scoring layer on hand-made scores: normalised scores with statuses, ID/OOD lengths, per-seed means and gaps,
the aggregate over tasks and seeds, the tie rule, and the learned verdicts."""

import pandas as pd
import pytest

from pebench import metrics
from pebench.analysis import scoring

ACC, PPL = metrics.get("accuracy"), metrics.get("perplexity")


def test_normalised_with_statuses():
    assert scoring.normalised(0.55, ACC, 0.1) == pytest.approx(0.5)
    assert scoring.normalised(None, ACC, 0.1, status="diverged") == 0.0  # a diverged model counts as chance
    assert scoring.normalised(0.9, ACC, 0.1, status="error") is None  # an errored case has no score


def _frame() -> pd.DataFrame:
    rows = []
    for seed, shift in ((0, 0.0), (1, 0.1)):
        for L, score in ((32, 0.9), (64, 1.0), (128, 0.5), (256, 0.3)):
            rows.append({"task": "t", "encoding": "e", "train_length": 64, "eval_length": L, "seed": seed,
                         "score": score - shift, "status": "ok", "metric": "accuracy", "higher_is_better": True,
                         "chance_level": 0.5, "config": {}})  # fmt: skip
    return pd.DataFrame(rows)


def test_split_per_seed_and_gap():
    df = scoring.add_normalised(_frame())
    group = scoring.groups_by_task(df)[("t", 64)]["e"]
    ids, oods = scoring.split_lengths(group.by_length, 64)
    assert (ids, oods) == ([32, 64], [128, 256])
    assert scoring.per_seed_metric(group, ids, ACC) == pytest.approx({0: 95.0, 1: 85.0})
    assert scoring.gap_per_seed(group, ids, oods, ACC) == pytest.approx({0: 55.0, 1: 55.0})
    assert scoring.per_seed_norm(group, ids) == pytest.approx({0: 0.9, 1: 0.7})
    # the aggregate over tasks (task first, with its interval and rank range): tests/analysis/test_ranking.py


def test_gap_of_a_lower_is_better_metric_is_signed_so_lower_is_better():
    df = pd.DataFrame([{"task": "lm", "encoding": "e", "train_length": 64, "eval_length": L, "seed": 0, "score": p,
                        "status": "ok", "metric": "perplexity", "higher_is_better": False, "chance_level": 256.0,
                        "config": {}} for L, p in ((64, 4.0), (128, 6.0))])  # fmt: skip
    group = scoring.groups_by_task(scoring.add_normalised(df))[("lm", 64)]["e"]
    assert scoring.gap_per_seed(group, [64], [128], PPL) == {0: 2.0}


def test_ties_at_the_displayed_precision_are_all_best():
    assert scoring.best_of([99.996, 100.0, 99.9, None], 1, max) == [True, True, False, False]  # 99.996 shows 100.0
    assert scoring.best_of([3.141, 3.139, 3.2], 2, min) == [True, True, False]  # lower is better: 3.14 and 3.14
    assert scoring.best_of([None, None], 1, max) == [False, False]


def test_learned_verdict_thresholds():
    assert scoring.learned_verdict(0.5) == "learned"
    assert scoring.learned_verdict(0.49) == "partly"
    assert scoring.learned_verdict(0.1) == "partly"
    assert scoring.learned_verdict(0.09) == "not learned"
    assert scoring.learned_verdict(None) == "not learned"
