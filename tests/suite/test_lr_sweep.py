"""The learning-rate sweep, the default protocol: every rate trained and stored, each cell reported at the rate its
in-distribution validation chose, never by the out-of-distribution lengths; the protocol is said and never mixed
(issue 30, items 2 and 4)."""

import pandas as pd
import pytest

from pebench.analysis.findings.output import FindingsError, run_findings
from pebench.analysis.lr import (
    GRID,
    LEGACY_GRID,
    chosen,
    chosen_records,
    final_val,
    final_validation,
    protocol,
    resolve,
)
from pebench.cli import main
from pebench.errors import PebenchError
from pebench.report import ReportError, build_context
from pebench.store.load import load


def _rows(metric="accuracy", higher=True):
    rows, i = [], 0
    for point in ("lr0.001", "lr0.01"):
        for length in (64, 256):
            rows.append({"id": i, "case_id": f"rope-k_back-L{length}-{point}", "point": point,
                         "axes": [["lr", point.removeprefix("lr")]], "encoding": "rope", "task": "k_back",
                         "train_length": 64, "eval_length": length, "seed": 0, "metric": metric,
                         "higher_is_better": higher})  # fmt: skip
            i += 1
    return pd.DataFrame(rows)  # ids: 0 lr0.001@64, 1 lr0.001@256, 2 lr0.01@64, 3 lr0.01@256


def test_the_rate_is_chosen_by_the_validation_at_the_training_length_only():
    df = _rows()
    # lr0.01 validates better at the training length; the OOD row of lr0.001 would be the better one (its
    # validation value is never read: only the training-length result's curve counts)
    picked = chosen(df, {0: 0.70, 2: 0.90, 1: 0.99, 3: 0.10})
    assert set(picked["lr_point"]) == {"lr0.01"} and sorted(picked["eval_length"]) == [64, 256]
    assert set(chosen(df, {0: 0.90, 2: 0.70})["lr_point"]) == {"lr0.001"}
    assert set(chosen(df, {0: 0.80, 2: 0.80})["lr_point"]) == {"lr0.001"}  # a tie: the lower rate
    lower = _rows("perplexity", higher=False)  # lower is better
    assert set(chosen(lower, {0: 3.0, 2: 5.0})["lr_point"]) == {"lr0.001"}
    assert chosen(df, {}).empty  # no validation: nothing chosen


def test_final_validation_is_the_last_point_that_has_one():
    points = [(7, 10, 1.0, 0.5, None), (7, 20, 0.9, 0.6, None), (7, 30, 0.8, None, None), (8, 10, 1.0, None, None)]
    assert final_validation(points) == {7: 0.6}
    # a record's own curve names the metric (val_<metric>_1x, as the runner writes it)
    curve = [{"step": 10, "loss": 1.0, "val_accuracy_1x": 0.5, "val_accuracy_2x": 0.9},
             {"step": 20, "loss": 0.9, "val_accuracy_1x": 0.6}, {"step": 30, "loss": 0.8}]  # fmt: skip
    assert final_val(curve) == 0.6 and final_val([{"step": 5, "loss": 1.0}]) is None


def test_an_lr_sweep_run_is_one_page_at_the_chosen_rates(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    common = ("--encoding", "rope,alibi", "--task", "k_back", "-k", "L64", *tiny, "--steps", "4", "--no-cache",
              "--db", url)  # fmt: skip
    page = tmp_path / "page.html"
    proc = run_suite(*common, "--lr-sweep", "1e-3,1e-2", "--report", str(page))
    assert proc.returncode == 0, proc.output
    df = load(url)
    assert sorted(df["case_id"]) == ["alibi-k_back-L64-lr0.001", "alibi-k_back-L64-lr0.01",
                                     "rope-k_back-L64-lr0.001", "rope-k_back-L64-lr0.01"]  # fmt: skip
    assert df["run_options"].iloc[0]["lr_sweep"] == "0.001,0.01"  # one grid, one protocol, however typed
    html = page.read_text()
    assert 'id="lr-protocol"' in html and "best learning rate of 0.001,0.01" in html and "(2 cells)" in html
    assert not list(tmp_path.glob("page-*.html"))
    assert run_suite(*common, "--lr-sweep", "off").returncode == 0  # one learning rate: another protocol
    assert main(["compare", "1", "2", "--db", url]) == 2


def test_the_default_protocol_is_each_cell_at_the_better_of_two_rates(run_suite, tiny, tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    common = ("--encoding", "rope,alibi", "--task", "k_back", "-k", "L64", *tiny, "--steps", "4", "--no-cache",
              "--db", url)  # fmt: skip
    proc = run_suite(*common, lr_protocol=True)
    assert proc.returncode == 0, proc.output
    assert "protocol: each (encoding, task, seed) at the best of the learning rates 0.001,0.003" in proc.stdout
    df = load(url)
    assert sorted(df["case_id"]) == ["alibi-k_back-L64-lr0.001", "alibi-k_back-L64-lr0.003",
                                     "rope-k_back-L64-lr0.001", "rope-k_back-L64-lr0.003"]  # fmt: skip
    assert df["run_options"].iloc[0]["lr_sweep"] == "0.001,0.003" and GRID == (1e-3, 3e-3)
    # the closing summary: one table of k_back, each encoding at its chosen rate, said
    assert proc.stdout.count("k_back (train length 64)") == 1 and "each at its best rate of 0.001,0.003" in proc.stdout
    (line,) = [x for x in proc.stdout.splitlines() if "each at its best rate of" in x]
    chosen_here = dict(item.split() for item in line.split("(per seed): ")[1].split(", "))  # one rate per cell
    assert set(chosen_here) == {"alibi", "rope"} and set(chosen_here.values()) <= {"0.001", "0.003"}
    # what asks for one rate runs one rate, and says why; --lr-sweep off is the same protocol as --lr
    for args, why in [(("--lr", "0.01"), "one learning rate, 0.01, for every encoding (--lr 0.01 runs one rate)"),
                      (("--sweep", "layers=1,2"), "(--sweep runs one rate)"),
                      (("--seeds", "auto:2"), "(--seeds auto:2 runs one rate)"),
                      (("--lr-sweep", "off"), "one learning rate, 0.003, for every encoding; the")]:  # fmt: skip
        proc = run_suite(*common, *args, "--reuse", lr_protocol=True)
        assert proc.returncode == 0 and why in proc.stdout, proc.output
        run = load(url, "latest")
        assert run["run_options"].iloc[0]["lr_sweep"] is None and not run["case_id"].str.contains("-lr").any()
    monkeypatch.setenv("PYTEST_ADDOPTS", "--lr=0.02")  # --lr however given is read from pytest's options
    proc = run_suite(*common, "--reuse", lr_protocol=True)
    assert proc.returncode == 0 and "(--lr 0.02 runs one rate)" in proc.stdout, proc.output
    monkeypatch.delenv("PYTEST_ADDOPTS")
    assert main(["compare", "1", "latest", "--db", url]) == 2  # never ranked together
    # the findings and the page of the default run take each cell at its chosen rate; all runs together mix both
    # protocols, which is one line of error
    assert run_findings(url, 1).runs == [1]
    with pytest.raises(FindingsError, match="mix learning-rate protocols"):
        run_findings(url, "all")
    with pytest.raises(ReportError, match="mix learning-rate protocols"):
        build_context(url, "all")
    assert build_context(url, 1)["lr_protocol"]["rates"] == "0.001,0.003"


def test_compare_says_the_protocol_of_its_runs(run_suite, tiny, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    common = ("--encoding", "rope", "--task", "k_back", "-k", "L64", *tiny, "--steps", "4", "--no-cache", "--db", url)
    for _ in range(2):
        assert run_suite(*common, lr_protocol=True).returncode == 0
    capsys.readouterr()
    assert main(["compare", "1", "2", "--db", url]) in (0, 1)  # 1: the speed of a 4-step model is noise
    out = capsys.readouterr().out
    assert "protocol: the best learning rate of 0.001,0.003 per cell (each rate's cells compared as their own" in out
    # each rate is its own case and its own model's speed, never one rate standing for both
    assert "rope-k_back-L64-lr0.001" in out and "rope-k_back-L64-lr0.003" in out
    assert "rope-k_back-lr0.001 " in out and "rope-k_back-lr0.003 " in out and "0 improved, 2 same" in out
    assert "0 accuracy regression(s)" in out  # the same seed on CPU: the identical scores
    assert main(["compare", "1", "2", "--db", url, "--json"]) in (0, 1)
    assert '"protocol": "the best learning rate of 0.001,0.003 per cell' in capsys.readouterr().out


def test_the_protocol_of_a_stored_run_and_of_a_command():
    assert protocol({"lr_sweep": None}) is None and protocol({}) is None
    assert protocol({"lr_sweep": ""}) == LEGACY_GRID == "0.001,0.003,0.01"  # stored before the default protocol
    assert protocol({"lr_sweep": "0.001,0.003"}) == "0.001,0.003"
    assert resolve(None, None) == "0.001,0.003" and resolve("", None) == "0.001,0.003"
    assert resolve(None, "--sweep") is None and resolve("off", None) is None and resolve("OFF", "--sweep") is None
    assert resolve("1e-3,1e-2", "--sweep") == "0.001,0.01"  # given: the check against --sweep follows (one line)
    for given, bad in (("1e-3,x", "'x' is not a positive"), ("0,1e-3", "'0' is not a positive"),
                       ("1e-3,0.001", "'0.001' is given twice")):  # fmt: skip
        with pytest.raises(PebenchError, match=f"^--lr-sweep '{given}': {bad}"):
            resolve(given, None)
    assert protocol({"lr_sweep": "1e-3,3e-3"}) == protocol({"lr_sweep": "0.001,0.003"})


def test_the_summary_takes_each_cell_at_its_chosen_rate():
    from types import SimpleNamespace as R

    recs = [R(encoding="rope", task="k_back", train_length=64, eval_length=L, seed=s, case_id=f"rope-k_back-L{L}-{p}",
              point=p, axes=[["lr", p.removeprefix("lr")]], metric="accuracy",
              higher_is_better=True) for p in ("lr0.001", "lr0.003") for L in (64, 256)
            for s in (0, 1)]  # fmt: skip
    # seed 0 validates better at 3e-3, seed 1 at 1e-3; an OOD record's validation is never read
    val = {("rope-k_back-L64-lr0.001", 0): 0.5, ("rope-k_back-L64-lr0.003", 0): 0.9,
           ("rope-k_back-L64-lr0.001", 1): 0.8, ("rope-k_back-L64-lr0.003", 1): 0.7,
           ("rope-k_back-L256-lr0.001", 0): 1.0}  # fmt: skip
    kept = {(r.seed, r.case_id) for r in chosen_records(recs, val)}
    assert kept == {(0, "rope-k_back-L64-lr0.003"), (0, "rope-k_back-L256-lr0.003"),
                    (1, "rope-k_back-L64-lr0.001"), (1, "rope-k_back-L256-lr0.001")}  # fmt: skip
    marked = chosen_records(recs, val, {("rope-k_back-L64-lr0.001", 0): "chosen"})  # --lr-halving's mark wins
    assert {r.case_id for r in marked if r.seed == 0} == {"rope-k_back-L64-lr0.001", "rope-k_back-L256-lr0.001"}


def test_bad_lr_sweep_input_is_one_line(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    for args, message in [(("--lr-sweep", "--sweep", "layers=1,2"), "run --sweep without it"),
                          (("--lr-sweep", "--seeds", "auto"), "not per learning rate"),
                          (("--lr-sweep", "--val-batches", "0"), "give --val-batches 1 or more"),
                          (("--lr-sweep", "1e-3,x"), "--lr-sweep '1e-3,x': 'x' is not a positive finite learning "
                                                     "rate")]:  # fmt: skip
        proc = run_suite("--encoding", "rope", "--task", "k_back", *tiny, "--db", url, *args)
        assert proc.returncode == 4 and message in proc.stderr and "Traceback" not in proc.stderr, proc.output
    assert not (tmp_path / "r.db").exists()


def test_halving_trains_every_rate_short_and_only_the_best_to_the_budget(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    page = tmp_path / "page.html"
    proc = run_suite("--encoding", "rope", "--task", "k_back", "-k", "L64", *tiny, "--steps", "6", "--no-cache",
                     "--db", url, "--lr-sweep", "1e-3,3e-3,1e-2", "--lr-halving", "--report", str(page))  # fmt: skip
    assert proc.returncode == 0, proc.output
    df = load(url).sort_values("case_id")
    notes = [m["lr_halving"] for m in df["metrics"]]
    assert notes.count("chosen") == 1 and sorted(df["train_steps"]) == [2, 2, 6]  # ceil(6 / 3) for the others
    chosen_point = df["case_id"][[n == "chosen" for n in notes]].iloc[0].rsplit("-", 1)[1]
    assert all(n == "chosen" or f"short run of 2 of 6 steps: {chosen_point} validated better" == n for n in notes)
    # stored: 2 + 2 + 6 steps; trained: 3 x 2 + 6 = 12 (the chosen rate's short run too); the full sweep: 3 x 6 = 18
    assert df["config_hash"].nunique() == 3 and sum(df["train_steps"]) == 10
    html = page.read_text()
    assert f"Cells per chosen rate: {chosen_point.removeprefix('lr')}: 1 (1 cells)" in html
    for args, message in [(("--lr-halving", "--lr-sweep", "off"), "cannot run with one learning rate (--lr-sweep off)"),
                          (("--lr-halving", "--lr", "0.01"), "cannot run with one learning rate (--lr 0.01)"),
                          (("--lr-sweep", "1e-3,1e-2", "--lr", "0.01"), "--lr 0.01 trains every encoding at one"),
                          (("--lr-sweep", "--lr-halving", "--scale", "small"), "run it at --scale tiny")]:  # fmt: skip
        proc = run_suite("--encoding", "rope", "--task", "k_back", *tiny, "--db", url, *args)
        assert proc.returncode == 4 and message in proc.stderr, proc.output


def test_the_seed_spread_of_the_default_protocol_is_measured_and_found(run_suite, tiny, tmp_path):
    import json

    from pebench.analysis.noise import protocol_hash, task_sigma

    url = f"sqlite:///{tmp_path / 'r.db'}"
    proc = run_suite("--encoding", "rope", "--task", "k_back", "-k", "L64", *tiny, "--steps", "4", "--no-cache",
                     "--seeds", "2", "--db", url, lr_protocol=True)  # fmt: skip
    assert proc.returncode == 0, proc.output
    out = tmp_path / "spread.json"
    assert main(["seed-spread", "--db", url, "-o", str(out)]) == 0
    [entry] = json.loads(out.read_text())["tasks"]["k_back"]
    config = load(url)["config"].iloc[0]  # either rate: the protocol is the grid
    assert entry["protocol"] == protocol_hash(config, "0.001,0.003") and entry["seeds"] == 2
    assert entry["lr_grid"] == "0.001,0.003" and "--lr-sweep" not in entry["provenance"]["regenerate"]  # the default
    assert task_sigma("k_back", config, json.loads(out.read_text()), lr_grid="0.001,0.003") == entry["sigma"]
