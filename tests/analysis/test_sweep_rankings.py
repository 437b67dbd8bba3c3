"""Rankings across a sweep: each task's order at every point and Kendall's tau-b against the first point, within
each seed, averaged over seeds (issue 30, item 3). Values below are computed by hand from tau's definition:
(concordant - discordant) / number of pairs, no ties."""

import pandas as pd
import pytest

from pebench.analysis.sweeps import rankings
from pebench.report.sweep import tau_text

ORDER = {"a": 0.9, "b": 0.5, "c": 0.1}


def _frame(at_second: dict[int, dict[str, float]]) -> pd.DataFrame:
    rows = []
    for point in ("layers1", "layers2"):
        for seed in (0, 1):
            for enc in "abc":
                for length in (64, 128):
                    ood = ORDER[enc] if point == "layers1" else at_second[seed][enc]
                    rows.append({"case_id": f"{enc}-k_back-L{length}-{point}", "point": point,
                                 "encoding": enc, "task": "k_back",
                                 "train_length": 64, "eval_length": length, "seed": seed, "status": "ok",
                                 "score": 1.0 if length == 64 else ood, "metric": "accuracy", "higher_is_better": True,
                                 "chance_level": 0.0, "config": {}})  # fmt: skip
    return pd.DataFrame(rows).assign(id=range(len(rows)))


def test_the_same_order_at_both_points_is_tau_one():
    (task,) = rankings(_frame({0: ORDER, 1: ORDER}))
    assert [p.point for p in task.points] == ["layers1", "layers2"]
    assert [e for e, _ in task.points[1].order] == ["a", "b", "c"]
    assert task.taus["layers2"] == (1.0, 0.0, 2)


def test_reversed_in_one_seed_and_one_swap_in_the_other():
    reversed_ = {"a": 0.1, "b": 0.5, "c": 0.9}
    one_swap = {"a": 0.5, "b": 0.9, "c": 0.1}  # pairs: (a,b) discordant, (a,c) and (b,c) concordant: tau 1/3
    (task,) = rankings(_frame({0: reversed_, 1: one_swap}))
    mean, half, n = task.taus["layers2"]
    assert mean == pytest.approx((-1 + 1 / 3) / 2) and n == 2 and half is not None and half > 0
    # ranked by the mean over seeds of the OOD score: a 0.3, b 0.7, c 0.5
    assert [e for e, _ in task.points[1].order] == ["b", "c", "a"]
    assert tau_text(task.taus["layers2"]).startswith("τ -0.33 ± ") and tau_text(None) == "–"


def test_a_task_at_one_point_has_no_ranking_across_points():
    df = _frame({0: ORDER, 1: ORDER})
    assert rankings(df[df["case_id"].str.endswith("layers1")]) == []
