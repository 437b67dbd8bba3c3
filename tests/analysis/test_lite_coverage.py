"""The lite tier's interval for a run as it was run (issue 90): the map's error and the run's own seed noise, through
the map's weights for the seeds it ran (pebench.analysis.lite: ``seed_noise``, ``half_widths``, ``predict``), the
interval factor calibrated leave-one-encoding-out, and, from the shipped reference's recorded per-seed results (no
training), how often held-out single-seed runs fall inside their own and each other's intervals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pebench.analysis import lite, lite_coverage
from pebench.analysis.lite_coverage import Choice, Reference
from tests.study_scripts import load as load_study

LITE = {"tasks": ["a", "b"], "intercept": 0.1, "weights": {"a": 0.5, "b": 0.25},
        "residuals": [-0.03, -0.01, 0.0, 0.01, 0.03], "seed_sd": {"a": 0.04, "b": 0.08}, "interval_factor": 1.0,
        "reference_scores": {"x": 0.9, "y": 0.5, "z": 0.2}}  # fmt: skip


def width(found: lite.Prediction) -> float:
    return found.high - found.low


def test_seed_noise_is_the_spread_through_the_weights_over_the_seeds():
    weights, sd = {"a": 0.5, "b": 0.25}, {"a": 0.04, "b": 0.08}
    one = math.sqrt(0.5**2 * 0.04**2 + 0.25**2 * 0.08**2)
    assert lite.seed_noise(weights, sd) == pytest.approx(one)
    assert lite.seed_noise(weights, sd, 4) == pytest.approx(one / 2)  # 1 / sqrt(n)
    assert lite.seed_noise(weights, sd, {"a": 1, "b": 2}) == pytest.approx(math.sqrt(0.5**2 * 0.04**2
                                                                                     + 0.25**2 * 0.08**2 / 2))


def test_the_interval_is_the_maps_error_and_the_seed_noise_in_quadrature():
    r05, r95 = np.percentile(LITE["residuals"], [5, 95])
    noise = lite.seed_noise(LITE["weights"], LITE["seed_sd"])
    found = lite.predict({"a": 0.6, "b": 0.4}, LITE)
    assert found.score == pytest.approx(0.5) and found.noise == pytest.approx(noise) and found.seeds == 1
    assert found.score - found.low == pytest.approx(math.hypot(r05, lite.Z90 * noise))
    assert found.high - found.score == pytest.approx(math.hypot(r95, lite.Z90 * noise))
    wider = lite.predict({"a": 0.6, "b": 0.4}, LITE | {"interval_factor": 1.5})
    assert width(wider) == pytest.approx(1.5 * width(found))


def test_the_interval_widens_with_the_seed_spread():
    base = lite.predict({"a": 0.6, "b": 0.4}, LITE)
    noisier = lite.predict({"a": 0.6, "b": 0.4}, LITE | {"seed_sd": {"a": 0.08, "b": 0.16}})
    quiet = lite.predict({"a": 0.6, "b": 0.4}, LITE | {"seed_sd": {"a": 0.0, "b": 0.0}})
    assert width(quiet) < width(base) < width(noisier)
    assert quiet.low == pytest.approx(0.5 + np.percentile(LITE["residuals"], 5))  # the map's error alone


def test_the_interval_narrows_with_more_seeds_but_not_below_the_maps_error():
    widths = [width(lite.predict({"a": 0.6, "b": 0.4}, LITE, seeds=n)) for n in (1, 2, 4, 100)]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == 4
    floor = np.diff(np.percentile(LITE["residuals"], [5, 95]))[0]
    assert widths[-1] > floor and widths[-1] == pytest.approx(floor, abs=0.01)
    two = lite.predict({"a": 0.6, "b": 0.4}, LITE, seeds={"a": 2, "b": 2})
    assert two.seeds == 2 and "this run's seed noise, 2 seeds" in two.text()


def test_a_map_without_seed_spread_keeps_the_residuals_interval():
    old = {k: v for k, v in LITE.items() if k not in ("seed_sd", "interval_factor")}
    found = lite.predict({"a": 0.6, "b": 0.4}, old, seeds=3)
    assert (found.low, found.high) == pytest.approx(tuple(0.5 + np.percentile(LITE["residuals"], [5, 95])))
    assert found.noise == 0 and "(90% interval: the map's error)" in found.text()


def test_seed_sd_pools_the_encodings_with_several_seeds():
    per = {"e1": {"a": {0: 0.1, 1: 0.3}}, "e2": {"a": {0: 0.5, 1: 0.5, 2: 0.5}}, "e3": {"a": {0: 0.9}}}
    sd = lite.seed_sd(per, ["a", "b"])
    assert sd["a"] == pytest.approx(math.sqrt((0.02 + 0.0) / 2)) and math.isnan(sd["b"])


def _synthetic(bias: float, n: int = 16, seed: int = 0) -> Reference:
    """Encodings x 4 tasks, the full score the tasks' mean; the first 6 encodings have 3 seeds a task, spread 0.01
    around their mean (in opposite directions on alternate tasks, so a run's seed noise mostly cancels in the map)
    but ``bias`` away from it on every task (their runs miss by about ``bias``)."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame(rng.uniform(0, 1, (n, 4)), index=[f"e{i}" for i in range(n)], columns=list("abcd"))
    per = {e: {t: {0: float(table.loc[e, t])} for t in table.columns} for e in table.index}
    for e in table.index[:6]:
        per[e] = {t: {s: float(table.loc[e, t]) + bias + 0.01 * (s - 1) * (-1) ** j for s in range(3)}
                  for j, t in enumerate(table.columns)}  # fmt: skip
    return Reference(table, per, np.ones(4))


def test_the_calibrated_factor_widens_an_interval_that_covers_too_little():
    choice = Choice(budget=4)
    honest = _synthetic(bias=0.0)
    rows = np.arange(len(honest.table))
    assert lite_coverage.calibrate(honest, rows, choice, *lite_coverage.residuals(honest, rows, choice)) == 1.0
    biased = _synthetic(bias=0.2)
    factor = lite_coverage.calibrate(biased, rows, choice, *lite_coverage.residuals(biased, rows, choice))
    assert factor > 2
    plain, calibrated = lite_coverage.validate(honest, choice), lite_coverage.validate(biased, choice)
    assert plain["coverage"] == 1.0 and plain["predictions"] == 18 and plain["factor"] == 1.0
    assert calibrated["coverage_map_only"] < 0.5 and calibrated["factor"] > 2
    assert calibrated["coverage"] > calibrated["coverage_map_only"]


@pytest.fixture(scope="module")
def reference() -> Reference:
    """The shipped reference's full-coverage encodings with their recorded per-seed lite-task scores."""
    from pebench.analysis.reference import reference_url

    return load_study("studies/lite/choose.py").reference(reference_url(None))[0]


def test_two_seeds_of_a_held_out_encoding_fall_inside_each_others_intervals(reference):
    """Every reference encoding with several seeds on the lite tasks, held out of the choice and the fit: each of its
    seeds' predictions and its interval, against its measured full score and against its other seeds' predictions.
    The shipped lite.json records the same numbers (python studies/lite/choose.py --write 16)."""
    shipped = lite.load()
    result = lite_coverage.validate(reference, Choice(shipped["budget_min"], shipped["seeds"]))
    assert result["coverage"] >= 0.85 and result["coverage_mutual"] >= 0.85, result["per_run"]
    assert result["coverage"] == pytest.approx(shipped["validation"]["coverage_single_seed"])
    assert result["predictions"] == shipped["validation"]["coverage_predictions"] >= 10
    assert result["coverage_mutual"] == pytest.approx(shipped["validation"]["coverage_mutual"])
    assert result["mutual_pairs"] == 2 * result["predictions"]  # 3 seeds each: 6 ordered pairs of 3 runs
    assert result["tau"] == pytest.approx(shipped["validation"]["tau"])


def test_the_shipped_seed_spread_and_factor_come_from_the_reference(reference):
    shipped = lite.load()
    fold, sd, factor, residuals = lite_coverage.shipped(reference, Choice(shipped["budget_min"], shipped["seeds"]))
    assert [str(reference.table.columns[j]) for j in fold.order] == shipped["tasks"]
    assert sd == pytest.approx(shipped["seed_sd"], abs=1e-5) and factor == pytest.approx(shipped["interval_factor"])
    assert list(residuals) == pytest.approx(shipped["residuals"], abs=1e-5)


def _record(task: str, seed: int, length: int, score: float):
    from pebench.records.record import ResultRecord

    return ResultRecord(case_id=f"mine-{task}-L64", encoding="mine", encoding_version="1", task=task, task_version="1",
                        train_length=64, eval_length=length, seed=seed, config={"model": {"vocab_size": 32}},
                        config_hash=task, chance_level=0.0, score=score)  # fmt: skip


def test_the_terminal_says_what_the_interval_holds_for_the_seeds_run(monkeypatch):
    from pebench.suite import summary

    monkeypatch.setattr(lite, "load", lambda *a, **k: LITE | {"validation": {"tau": 0.7, "coverage_single_seed": 0.9}})
    one = [_record(t, 0, L, 0.5) for t in LITE["tasks"] for L in (64, 128)]
    lines = summary.lite_lines(one)
    assert "Kendall's tau 0.70; its interval held 90% of held-out single-seed runs" in lines[0]
    (line,) = [x for x in lines if x.startswith("  mine: ")]
    assert "(90% interval: the map's error and this run's seed noise, 1 seed), rank" in line
    two = summary.lite_lines(one + [_record(t, 1, L, 0.5) for t in LITE["tasks"] for L in (64, 128)])
    assert "this run's seed noise, 2 seeds" in next(x for x in two if x.startswith("  mine: "))
