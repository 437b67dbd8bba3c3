"""The lite tier (pebench.analysis.lite): the selection finds the informative tasks of a synthetic reference whose
answer is known, the leave-one-encoding-out validation never shows the held-out encoding to the selection or the
fit, the prediction and its interval, the shipped lite tier matches the shipped reference, and ``--tier lite``
collects only its tasks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pebench.analysis import lite
from pebench.errors import PebenchError


def _synthetic(n: int = 30, informative: tuple[int, ...] = (3, 7), seed: int = 0) -> pd.DataFrame:
    """Encodings x 12 tasks: the informative tasks separate the encodings (each by a quality of its own), the others
    every encoding solves alike (0.9 and a little noise), so the full mean is the informative tasks' sum and a
    constant: exactly what a selection should find."""
    rng = np.random.default_rng(seed)
    cols = {f"t{t}": rng.uniform(0, 1, n) if t in informative else 0.9 + rng.normal(0, 0.005, n) for t in range(12)}
    return pd.DataFrame(cols, index=[f"e{i}" for i in range(n)])


def test_the_selection_finds_the_informative_tasks():
    table = _synthetic()
    chosen = lite.greedy(table.to_numpy(), table.mean(axis=1).to_numpy(), np.ones(12), budget=2)
    assert sorted(chosen) == [3, 7]
    cost = np.ones(12)
    cost[3] = 5.0
    cheap_only = lite.greedy(table.to_numpy(), table.mean(axis=1).to_numpy(), cost, budget=2)
    assert 3 not in cheap_only and 7 in cheap_only  # the budget keeps task 3 (cost 5) out


def test_validation_never_shows_the_held_out_encoding(monkeypatch):
    table = _synthetic(n=12)
    seen = []
    original = lite.greedy

    def spy(scores, full, cost, budget, most=8):
        seen.append({tuple(np.round(row, 9)) for row in scores})
        return original(scores, full, cost, budget, most)

    monkeypatch.setattr(lite, "greedy", spy)
    result = lite.validate(table, np.ones(12), budget=2)
    assert len(seen) == 12
    for i, rows in enumerate(seen):
        assert tuple(np.round(table.to_numpy()[i], 9)) not in rows and len(rows) == 11
    assert result["tau"] > 0.8 and result["median_rank_error"] <= 1


def test_a_prediction_with_its_interval_and_rank():
    shipped = {"tasks": ["a", "b"], "intercept": 0.1, "weights": {"a": 0.5, "b": 0.25},
               "residuals": [-0.02, -0.01, 0.0, 0.01, 0.02], "reference_scores": {"x": 0.9, "y": 0.5, "z": 0.2}}
    found = lite.predict({"a": 0.6, "b": 0.4}, shipped)
    assert found.score == pytest.approx(0.1 + 0.3 + 0.1) and found.low < found.score < found.high
    assert (found.rank, found.rank_low, found.rank_high, found.of) == (2, 2, 3, 3)  # y (0.5) is inside the interval
    assert "predicted full OOD score 0.500" in found.text()
    assert lite.predict({"a": 0.6}, shipped) is None  # a lite task missing: no prediction
    assert lite.predict({"a": 0.6, "b": 0.4}, shipped, exclude="x").of == 2
    with pytest.raises(PebenchError, match="--tier lite runs the tasks a, b; --task names none of them"):
        lite.lite_tasks(["k_back"], shipped)


def test_the_shipped_lite_tier_is_derived_from_the_shipped_reference():
    """A changed reference needs the lite tier derived again: python studies/lite/choose.py --write 16."""
    from pebench import tasks
    from pebench.analysis.reference import reference_url
    from pebench.store.database import open_db
    from pebench.store.load import load_light

    shipped = lite.load()
    engine = open_db(reference_url(None), create=False)
    try:
        assert lite.inputs_digest(load_light(engine)) == shipped["reference_digest"]
    finally:
        engine.dispose()
    assert set(shipped["tasks"]) <= set(tasks.available()) and set(shipped["weights"]) == set(shipped["tasks"])
    assert len(shipped["residuals"]) == len(shipped["reference_scores"]) == 42


def test_tier_lite_collects_only_the_lite_tasks(run_suite, tmp_path):
    proc = run_suite("--collect-only", "--tier", "lite", "--encoding", "alibi", "--db",
                     f"sqlite:///{tmp_path / 'r.db'}")  # fmt: skip
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    collected = {line.split("[", 1)[1].split("-")[1] for line in ids}
    assert collected == set(lite.load()["tasks"]), proc.output
    wrong = run_suite("--collect-only", "--tier", "lite", "--task", "k_back", "--db", f"sqlite:///{tmp_path / 'r.db'}")
    assert wrong.returncode != 0 and "--tier lite runs the tasks" in wrong.output and "Traceback" not in wrong.output


def test_a_lite_run_ends_with_its_prediction_in_the_terminal(run_suite, tiny, tmp_path):
    proc = run_suite("--tier", "lite", "--encoding", "alibi", *tiny, "--steps", "2", "--no-cache", "--db",
                     f"sqlite:///{tmp_path / 'r.db'}")  # fmt: skip
    assert proc.returncode == 0, proc.output
    assert "lite tier: lm, binary_multiplication, assoc_recall, reverse predict the full tier" in proc.stdout
    assert "  cells run: lm (trained at " in proc.stdout and "reverse (trained at " in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("  alibi: "))
    assert "predicted full OOD score" in line and "of 41 reference encodings + yours (predicted, not measured" in line
