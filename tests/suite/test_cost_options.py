"""The suite with the options of issue 28: ``--stop learned`` stores and shows the steps taken and why training
ended; ``--seeds auto:N`` adds a seed only where the lower seeds leave a verdict open, records why, and refuses to
run in parallel."""

from __future__ import annotations

import subprocess
import sys

import pebench.results as results

TINY = ("--d-model", "32", "--heads", "2", "--eval-samples", "32", "--val-batches", "0")


def test_stop_reason_and_steps_are_stored_and_shown(run_suite, tmp_path):
    db = f"sqlite:///{tmp_path}/r.db"
    res = run_suite("-k", "L64", "--encoding", "rope", "--task", "k_back", "--stop", "learned", "--db", db,
                    "--cache-dir", str(tmp_path / "c"), *TINY, "--lr", "1e-2", "--batch-size", "16", "--steps", "150")
    assert res.returncode == 0, res.stdout + res.stderr
    (row,) = results.load(db).to_dict("records")
    assert row["metrics"]["stop_reason"] == "learned" and row["train_steps"] < 150
    assert row["config"]["train"]["stop"]["rule"] == "learned"
    out = subprocess.run([sys.executable, "-m", "pebench", "results", "--db", db], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    header, line = [x for x in out.splitlines() if "case_id" in x or "rope-k_back-L64" in x][-2:]
    assert "stop" in header.split() and "train_steps" in header.split()
    assert " learned " in f" {line} " and f" {row['train_steps']} " in f" {line} "
    from pebench.report.page import render_report

    render_report(db, tmp_path / "r.html", None)
    page = (tmp_path / "r.html").read_text()
    assert f"1 learned · {row['train_steps']} of 150 steps" in page and "A line that ends before" in page


def test_auto_seeds_add_seeds_only_where_open_and_say_why(run_suite, tmp_path):
    db = f"sqlite:///{tmp_path}/r.db"
    args = ("-k", "L64", "--encoding", "rope,alibi", "--task", "k_back", "--steps", "4", "--seeds", "auto:2",
            "--db", db, "--cache-dir", str(tmp_path / "c"), *TINY)  # fmt: skip
    res = run_suite(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    df = results.load(db)
    # 4 steps is no protocol with a measured seed spread: one seed decides nothing, so both cells get seed 1
    pairs = sorted(zip(df["encoding"], df["seed"], strict=True))
    assert pairs == [("alibi", 0), ("alibi", 1), ("rope", 0), ("rope", 1)]
    rows = zip(df["encoding"], df["seed"], df["metrics"], strict=True)
    reasons = {(e, s): m.get("seed_reason") for e, s, m in rows}
    assert reasons[("rope", 0)] == "first seed"
    assert "no measured seed spread" in reasons[("rope", 1)]
    assert results.load(db)["run_options"].iloc[0]["seeds"] == "auto:2"


def test_auto_seeds_refuse_parallel_runs_in_one_line(run_suite, tmp_path):
    res = run_suite("--seeds", "auto", "--shard", "1/2", "--db", f"sqlite:///{tmp_path}/r.db")
    assert res.returncode == 4
    assert "--seeds auto:5 adds seeds in order" in res.stderr and "no -n, --shard or --executor ray" in res.stderr
    assert not (tmp_path / "r.db").exists()
    res = run_suite("--seeds", "auto:0", "--db", f"sqlite:///{tmp_path}/r.db")
    assert res.returncode == 4 and "valid: a positive integer (e.g. 3), auto" in res.stderr


def test_the_report_says_how_training_ended_and_why_each_seed(tmp_path):
    from pebench.report.seeds import seeds_tip, stop_reasons, stopped_early, training_text, whole_budget

    rows = [{"seed": s, "train_steps": n, "metrics": {"stop_reason": why, "seed_reason": sr},
             "config": {"train": {"steps": 200}}}
            for s, n, why, sr in ((0, 70, "learned", "first seed"), (1, 200, "budget", "L64: 0.95 within the noise"))]
    assert training_text(rows) == "1 budget, 1 learned · 70-200 of 200 steps"
    assert seeds_tip(rows) == "seed 1: L64: 0.95 within the noise"
    assert seeds_tip(rows[:1]) == "decided by the first seed (--seeds auto)"
    assert training_text([{"seed": 0, "metrics": {}}]) == "" and seeds_tip([{"seed": 0, "metrics": {}}]) == ""
    # the page's notes on stopping read the stored reasons, never the text shown
    assert stop_reasons(rows) == {"budget": 1, "learned": 1} and stop_reasons([{"seed": 0, "metrics": {}}]) == {}
    assert stopped_early([{}, stop_reasons(rows)]) and not stopped_early([{"budget": 2, "diverged": 1}, {}])
    assert whole_budget([{"budget": 2}, {}]) and not whole_budget([{"budget": 1}, stop_reasons(rows)])
    assert not whole_budget([{}]) and not whole_budget([{"budget": 1, "diverged": 1}])


def test_runs_of_another_stop_rule_or_precision_are_never_compared_or_reused(run_suite, tmp_path):
    # issue 33, item 5: the protocol options are part of the configuration, so compare refuses the two runs in one
    # line naming the setting, --baseline refuses the run, and --reuse copies nothing across them
    db = f"sqlite:///{tmp_path}/r.db"
    base = ("-k", "L64", "--encoding", "rope", "--task", "k_back", "--steps", "6", "--db", db, "--cache-dir",
            str(tmp_path / "c"), *TINY)  # fmt: skip
    assert run_suite(*base).returncode == 0
    for extra, setting in ((("--stop", "learned"), "train.stop"), (("--precision", "bf16"), "train.precision")):
        res = run_suite(*base, *extra, "--reuse")
        assert res.returncode == 0, res.stdout + res.stderr
        assert "pebench --reuse: 0 of 1 results copied" in res.stdout
        cmp = subprocess.run([sys.executable, "-m", "pebench", "compare", "1", "latest", "--db", db],
                             capture_output=True, text=True)  # fmt: skip
        assert cmp.returncode == 2 and len(cmp.stderr.strip().splitlines()) == 1, cmp.stdout + cmp.stderr
        assert "have no case with the same config" in cmp.stderr and setting in cmp.stderr, cmp.stderr
        refused = run_suite(*base, *extra, "--baseline", "1")
        assert refused.returncode != 0 and setting in refused.output, refused.output
