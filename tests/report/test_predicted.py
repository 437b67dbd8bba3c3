"""The page's predicted standing of a lite run (issue 66 item 2): an encoding that ran only the lite tier's tasks gets
its full score and rank predicted by the lite map, with the residuals' interval, among the reference's measured full
scores, marked as predicted; a full-tier run of the same encoding replaces the prediction with the measurement.

The lite tier here is a hand-made one (two accuracy tasks of a three-task full tier), so that every expected number
follows from the map's formula by hand: predicted = a + sum_t w_t * n_t with n_t = (score - chance) / (1 - chance)
at the out-of-distribution length."""

from __future__ import annotations

import numpy as np
import pytest

from pebench import store as db
from pebench.report import build_context, predicted, render_report

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu:test", "host": "h"}
CHANCE = 0.2
LITE = {
    "tasks": ["k_back", "reverse"],
    "intercept": 0.1,
    "weights": {"k_back": 0.5, "reverse": 0.3},
    "residuals": [-0.2, -0.1, 0.0, 0.05, 0.1, 0.2],  # 5th-95th percentile: -0.175, 0.175
    "reference_scores": {"ref_a": 0.8, "ref_b": 0.6, "ref_c": 0.5, "ref_d": 0.3, "ref_e": 0.1},
    "full_tasks": ["k_back", "reverse", "copy"],
    "validation": {"tau": 0.8, "spearman": 0.9, "within_3_or_range": 0.95},
}


def record(enc: str, task: str, length: int, score: float) -> dict:
    return {"case_id": f"{enc}-{task}-L{length}", "encoding": enc, "encoding_version": "1", "task": task,
            "task_version": "1", "train_length": 64, "eval_length": length, "seed": 0,
            "config": {"model": {"vocab_size": 32}}, "config_hash": f"{enc}-{task}", "status": "ok",
            "metric": "accuracy", "higher_is_better": True, "chance_level": CHANCE, "score": score}  # fmt: skip


def add_run(url: str, scores: dict[tuple[str, str], float]) -> None:
    engine = db.open_db(url)
    run = db.start_run(engine, RUN)
    for (enc, task), ood in scores.items():
        db.add_result(engine, run, record(enc, task, 64, 1.0))
        db.add_result(engine, run, record(enc, task, 128, ood))
    db.finish_run(engine, run, "finished")
    engine.dispose()


@pytest.fixture
def lite(monkeypatch):
    monkeypatch.setattr(predicted.lite_tier, "load", lambda *a, **k: LITE)
    return LITE


def norm(score: float) -> float:
    return (score - CHANCE) / (1 - CHANCE)


def test_a_lite_row_is_predicted_with_its_interval_among_the_measured_scores(tmp_path, lite):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    add_run(url, {("mine", "k_back"): 0.84, ("mine", "reverse"): 0.6}
            | {("alibi", t): 0.5 for t in lite["full_tasks"]})  # fmt: skip
    ctx = build_context(url, "all")
    standing = ctx["predicted"]
    assert standing["predicted"] == ["mine"]  # alibi ran every task of the full tier: measured, not predicted
    score = 0.1 + 0.5 * norm(0.84) + 0.3 * norm(0.6)  # 0.1 + 0.5 * 0.8 + 0.3 * 0.5 = 0.65
    low, high = score + np.percentile(lite["residuals"], 5), score + np.percentile(lite["residuals"], 95)
    (row,) = [r for r in standing["rows"] if r.predicted]
    assert row.encoding == "mine" and row.score == f"{score:.3f}" == "0.650"
    assert row.interval == f"[{low:.3f}, {high:.3f}], rank 1-4" == "[0.475, 0.825], rank 1-4"  # 0.825 beats ref_a
    order = [r.encoding for r in standing["rows"]]
    assert order.index("ref_a") < order.index("mine") < order.index("ref_b")  # 0.8 > 0.65 > 0.6
    assert row.rank == "~2" and standing["badges"]["mine"] == "~2 (1-4) of 6"

    out = tmp_path / "page.html"
    render_report(url, out, run="all")
    page = out.read_text()
    assert 'id="predicted"' in page and "Predicted, not measured" in page and "predicted ~2 (1-4) of 6" in page


def test_a_full_tier_run_of_the_same_encoding_replaces_the_prediction(tmp_path, lite):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    add_run(url, {("mine", "k_back"): 0.84, ("mine", "reverse"): 0.6})
    assert build_context(url, "all")["predicted"]["predicted"] == ["mine"]
    add_run(url, {("mine", t): 0.7 for t in lite["full_tasks"]})  # the full tier, later
    assert build_context(url, "all")["predicted"] is None
    out = tmp_path / "page.html"
    render_report(url, out, run="all")
    assert 'id="predicted"' not in out.read_text()


def test_no_prediction_without_every_lite_task(tmp_path, lite):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    add_run(url, {("mine", "k_back"): 0.84})
    assert build_context(url, "all")["predicted"] is None


def test_the_page_says_what_the_interval_holds(tmp_path, monkeypatch):
    """Issue 90: with the lite tasks' seed spread shipped, the interval holds the run's seed noise too (wider than the
    residuals' alone), and the page says so, with the interval's coverage of held-out single-seed runs."""
    noisy = LITE | {"seed_sd": {"k_back": 0.1, "reverse": 0.1}, "interval_factor": 1.0,
                    "validation": LITE["validation"] | {"coverage_single_seed": 0.93, "coverage_predictions": 15}}
    monkeypatch.setattr(predicted.lite_tier, "load", lambda *a, **k: noisy)
    url = f"sqlite:///{tmp_path / 'r.db'}"
    add_run(url, {("mine", "k_back"): 0.84, ("mine", "reverse"): 0.6})
    (row,) = [r for r in build_context(url, "all")["predicted"]["rows"] if r.predicted]
    assert row.holds == "90% interval: the map's error and this run's seed noise, 1 seed"
    low, high = (float(v) for v in row.interval.split("]")[0].strip("[").split(", "))
    assert high - low > np.diff(np.percentile(LITE["residuals"], [5, 95]))[0]  # wider than the map's error alone
    out = tmp_path / "page.html"
    render_report(url, out, run="all")
    page = out.read_text()
    assert "(90% interval: the map&#39;s error and this run&#39;s seed noise, 1 seed)" in page
    assert "the interval held the measured score for 93% of 15 held-out single-seed runs" in page
