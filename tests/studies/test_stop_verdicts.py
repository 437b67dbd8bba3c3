"""``python studies/stop_verdicts/verdicts.py`` (issue 28, item 5): one budget run gives both sides, because the
stopped model is the budget run's model at the stop step; the table compares verdicts and steps. And
``python studies/stop_verdicts/spread.py``: the seed spread of the budget side."""

from __future__ import annotations

import json

import pytest
from study_scripts import load

from pebench.analysis.noise import protocol_hash
from pebench.engine.runner import Case, Runner
from pebench.engine.settings import Settings

stopping = load("studies/stop_verdicts/verdicts.py")
spread = load("studies/stop_verdicts/spread.py")


@pytest.mark.slow
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

    data = {
        "task": "no_such_task_for_spread",
        "train_length": 4,
        "metric": "accuracy",
        "chance": 0.0,
        "higher_is_better": True,
        "vocab_size": 10,
        "config": {},
        "rows": [row("a", s, 1.0) for s in range(3)] + [row("b", s, v) for s, v in enumerate((0.5, 0.45, 0.55))],
    }
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
    assert stopping.run("k_back", ["rope"], 1, tmp_path) == 0
    assert measured == ["k_back"] and json.loads((tmp_path / "k_back.json").read_text())["config"] == fresh["config"]
    assert "table of ['k_back']" in capsys.readouterr().out
    assert stopping.run("k_back", ["rope"], 1, tmp_path) == 0 and measured == ["k_back"]  # fresh: not again
    # a stale file that is not asked for is left out of the table, with why
    (tmp_path / "k_back.json").write_text(json.dumps(older))
    assert stopping.run("", ["rope"], 1, tmp_path) == 0
    out = capsys.readouterr().out
    assert "table of []" in out
    assert f"Left out, to be measured again: k_back (measured at task version 0, now {task.version})." in out

    # the command line: the same, a stale file measured again by default with the core encodings, 3 seeds
    (tmp_path / "k_back.json").write_text(json.dumps(older))
    measured.clear()
    asked: list[tuple] = []
    monkeypatch.setattr(stopping, "measure", lambda name, *a: asked.append((name, *a)) or {**fresh, "rows": []})
    assert stopping.main(["k_back", "--out", str(tmp_path)]) == 0
    assert asked == [("k_back", ["nope", "sinusoidal", "learned", "rope", "alibi"], 3)]
    assert stopping.main(["nonesuch", "--out", str(tmp_path)]) == 2  # an unknown task: one line
    assert "valid tasks:" in capsys.readouterr().err


def test_seed_spread_from_stop_verdict_files(tmp_path, capsys):
    """The budget side of the stop-verdict files is 3 seeds of the core encodings at the defaults: a task the shipped
    spread lacks is measured from it; one measured already, a stale file and a task whose seeds all scored alike are
    left as they are, each said."""
    runner = Runner(Settings(progress=False))

    def verdict_file(task_name, scores, steps=None):
        task = runner.task(task_name)
        config = runner.describe(Case("rope", task_name, task.train_length, 0))
        rows = [{"encoding": enc, "seed": s, "budget": {str(task.train_length): v}}
                for enc, by_seed in scores.items() for s, v in enumerate(by_seed)]  # fmt: skip
        data = {"task": task_name, "train_length": task.train_length, "metric": task.metric, "chance": 0.0,
                "higher_is_better": task.higher_is_better, "vocab_size": task.vocab_size, "config": config,
                "budget_steps": steps or runner.settings.train_config(task).steps, "rows": rows}  # fmt: skip
        (tmp_path / "v" / f"{task_name}.json").write_text(json.dumps(data))

    (tmp_path / "v").mkdir()
    verdict_file("k_back", {"rope": [1.0, 0.9, 0.8], "alibi": [0.5, 0.5, 0.5]})  # variances 0.01 and 0
    verdict_file("copy", {"rope": [1.0, 1.0, 1.0], "alibi": [0.2, 0.2, 0.2]})  # no spread at all
    verdict_file("sort", {"rope": [1.0, 0.0, 1.0]}, steps=3)  # measured at another budget: stale
    out = tmp_path / "spread.json"
    assert spread.main([str(tmp_path / "v"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "left out (stale): sort (measured at 3 steps, now" in text and "every seed scored alike" in text
    data = json.loads(out.read_text())
    assert sorted(data["tasks"]) == ["k_back"]
    [entry] = data["tasks"]["k_back"]
    assert entry["sigma"] == pytest.approx((0.01 / 2) ** 0.5, abs=1e-6) and entry["seeds"] == 3
    assert entry["protocol"] == protocol_hash(runner.describe(Case("alibi", "k_back", 64, 0)))
    assert entry["provenance"]["source"].endswith("k_back.json")
    assert "studies/stop_verdicts/spread.py" in entry["provenance"]["regenerate"]
    # measured at these defaults already: kept, not replaced
    entry["sigma"] = 0.5
    out.write_text(json.dumps(data))
    assert spread.main([str(tmp_path / "v"), "-o", str(out)]) == 0
    assert "kept (measured at these defaults already): k_back" in capsys.readouterr().out
    assert json.loads(out.read_text())["tasks"]["k_back"][0]["sigma"] == 0.5
    assert spread.main([str(tmp_path / "none")]) == 2  # no files: one line
    assert "studies/stop_verdicts/verdicts.py TASKS" in capsys.readouterr().err
