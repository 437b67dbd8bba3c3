"""The *Why* section's numbers (pebench.report.why), worked by hand: the score beside the diagnostics is the mean over
the same tasks, and the column that moved most is chosen on the one scale of pebench.analysis.mechanisms."""

from __future__ import annotations

import pandas as pd
from pytest import approx

from pebench.report.why import why_view


def _row(task: str, length: int, score: float, diagnostics: dict | None) -> dict:
    return {"encoding": "rope", "task": task, "train_length": 8, "eval_length": length, "seed": 0, "status": "ok",
            "metric": "accuracy", "higher_is_better": True, "chance_level": 0.0, "score": score, "config": {},
            "metrics": diagnostics}  # fmt: skip


def _cells(rows: list[dict]) -> dict[str, str]:
    (view,) = why_view(pd.DataFrame(rows), ["rope"])
    return {c["name"]: c["text"] for c in view["cells"]} | {"most": view["most"]}


def test_the_score_beside_the_diagnostics_is_that_of_the_diagnosed_tasks():
    measured = {1: {"local_mass": 1.0, "position_probe": 0.8}, 4: {"local_mass": 0.5, "position_probe": -1.6875}}
    rows = [_row("a", 8 * m, s, measured[m]) for m, s in ((1, 0.9), (4, 0.3))]
    rows += [_row("b", 8 * m, s, None) for m, s in ((1, 0.5), (4, 0.5))]  # scored, no diagnostics: not averaged in
    cells = _cells(rows)
    assert cells["score"] == "0.90→0.30" and cells["local_mass"] == "1.00→0.50"
    assert cells["most"] == "position probe R²"  # its skill fell 0.8 -> 0, the local mass by 0.5


def test_the_probe_does_not_move_most_for_falling_below_the_mean_predictor_it_never_beat():
    rows = [_row("a", 8, 0.9, {"local_mass": 1.0, "position_probe": 0.0}),
            _row("a", 32, 0.3, {"local_mass": 0.7, "position_probe": -1.6875})]  # fmt: skip
    cells = _cells(rows)
    assert cells["most"] == "local mass"  # the R² fell by 1.69, the local mass by 0.3; the probe's skill by 0
    assert cells["position_probe"] == "0.00→-1.69" and float(cells["score"].split("→")[1]) == approx(0.3)
