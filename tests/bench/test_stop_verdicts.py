"""``pebench bench --stop-verdicts`` (issue 28, item 5): one budget run gives both sides, because the stopped model
is the budget run's model at the stop step; the table compares verdicts and steps."""

from __future__ import annotations

import json

from pebench.bench import stopping
from pebench.engine.runner import Case, Runner
from pebench.engine.settings import Settings


def test_the_stopped_side_is_the_model_a_stop_run_trains(tmp_path):
    tiny = {"d_model": 32, "n_heads": 2, "steps": 150, "lr": 1e-2, "batch_size": 16, "eval_samples": 32,
            "val_batches": 0, "progress": False}  # fmt: skip
    data = stopping.measure("k_back", ["rope"], 1, settings=Settings(**tiny))
    (row,) = data["rows"]
    assert row["stop_reason"] == "learned" and row["stop_steps"] < row["budget_steps"] == 150
    # the other sides of the same run: a looser threshold or the plateau rule never stop later than learned at 0.99,
    # and the curve kept replays the stop: the 0.99 window is met first at the stop step
    assert row["stop95_steps"] <= row["stop_steps"] and row["plateau_steps"] <= row["stop_steps"]
    first = next(i for i in range(2, len(row["curve"])) if all(p[2] >= 0.99 for p in row["curve"][i - 2 : i + 1]))
    assert row["curve"][first][0] == row["stop_steps"]
    # the same case trained by the runner with --stop learned: same steps, same scores at every quick length
    runner = Runner(Settings(**tiny, stop="learned"))
    record = {L: runner.run(Case("rope", "k_back", L, 0)) for L in (64, 128, 256)}
    assert record[64].train_steps == row["stop_steps"] and record[64].metrics["stop_reason"] == "learned"
    for L, rec in record.items():
        assert rec.score == row["stop"][L]
    (tmp_path / "k_back.json").write_text(json.dumps(data))
    text = stopping.table([tmp_path / "k_back.json"])
    assert "| k_back | 1 | rope learned |" in text and f"| rope 1 | 150, {row['stop_steps']} (" in text
    assert "1 of 1 cells keep their verdict, 3 of 3 columns their marked winner" in text
    assert "`plateau` ({'rule': 'plateau'" in text and "`stop95` ({'rule': 'learned', 'accuracy': 0.95" in text


def test_seeds_auto_is_replayed_on_the_measured_seeds():
    # two encodings, three seeds: "a" learns the task in every seed, "b" sits at the learned threshold (0.5), so its
    # call stays open and it takes every seed; "a" is decided after seed 0 (no spread is measured for this task
    # name, so from two seeds on each cell's own spread counts)
    def row(enc, seed, score):
        return {"encoding": enc, "seed": seed, "budget": {"4": score}, "stop": {"4": score}, "budget_steps": 100,
                "stop_steps": 60, "stop_reason": "learned"}  # fmt: skip

    data = {"task": "no_such_task_for_spread", "train_length": 4, "metric": "accuracy", "chance": 0.0,
            "higher_is_better": True, "vocab_size": 10, "config": {},
            "rows": [row("a", s, 1.0) for s in range(3)] + [row("b", s, v) for s, v in enumerate((0.5, 0.45, 0.55))]}
    used = stopping.auto_seeds(data, "stop", 3)
    assert used == {"a": 2, "b": 3}  # one seed decides nothing without a spread: "a" gets its second, then stops
    learned, _ = stopping.verdicts(data, "stop", used)
    assert learned == {"a": "learned", "b": "learned"}


def test_a_file_measured_at_other_defaults_is_stale_and_left_out_of_the_table(tmp_path, capsys, monkeypatch):
    """A task's file describes it at the defaults it was measured at: after a new task version or step budget it is
    measured again, and until then the table leaves it out and says why."""
    runner = Runner(Settings(progress=False))
    task = runner.task("k_back")
    fresh = {"task": "k_back", "config": {"task": task.config()}, "budget_steps": task.default_steps}
    assert stopping.stale(fresh, runner) is None
    older = {**fresh, "config": {"task": {**task.config(), "version": "0"}}}
    assert stopping.stale(older, runner) == f"measured at task version 0, now {task.version}"
    other = {**fresh, "config": {"task": {**task.config(), "options": {"k": 99}}}}
    assert stopping.stale(other, runner) == "measured with other task options"
    assert stopping.stale({**fresh, "budget_steps": 7}, runner) == f"measured at 7 steps, now {task.default_steps}"
    # main measures the stale file again (here: a stand-in measurement) and keeps a fresh one as it is
    (tmp_path / "k_back.json").write_text(json.dumps(older))
    measured: list[str] = []
    monkeypatch.setattr(stopping, "measure", lambda name, *a: measured.append(name) or {**fresh, "rows": []})
    monkeypatch.setattr(stopping, "table", lambda paths: f"table of {[p.stem for p in paths]}")
    assert stopping.main("k_back", ["rope"], 1, tmp_path) == 0
    assert measured == ["k_back"] and json.loads((tmp_path / "k_back.json").read_text())["config"] == fresh["config"]
    assert "table of ['k_back']" in capsys.readouterr().out
    assert stopping.main("k_back", ["rope"], 1, tmp_path) == 0 and measured == ["k_back"]  # fresh: not again
    # a stale file that is not asked for is left out of the table, with why
    (tmp_path / "k_back.json").write_text(json.dumps(older))
    assert stopping.main("", ["rope"], 1, tmp_path) == 0
    out = capsys.readouterr().out
    assert "table of []" in out
    assert f"Left out, to be measured again: k_back (measured at task version 0, now {task.version})." in out
