"""A failure is a result (issue 86): an exception in a case -- its encoding's behavioural probe, training, evaluation
-- is stored as the case's ``error`` result with one line naming the encoding, the task, where and the exception;
the terminal shows that line (the traceback only under ``-v``), and the other cases run on."""

from __future__ import annotations

from plugin_files import PROBE_FAILURE, write

import pebench.results as results
from pebench import encodings, plugins, tasks
from pebench.engine.code import code_version
from pebench.engine.runner import Case, Runner
from pebench.engine.settings import Settings
from pebench.hashing import config_hash
from pebench.status import ResultStatus

PROBE_LINE = ("batch_shy on k_back failed in the behavioural probe: ValueError: batch_shy takes at most 2 sequences, "
              "got 4")  # fmt: skip
RAISING_LINE = 'raise ValueError(f"batch_shy takes at most 2 sequences'


def test_a_case_failing_in_the_probe_is_stored_and_the_run_goes_on(run_suite, tiny, tmp_path):
    """A plugin whose hook passes the preflight's batch of two and raises on the probe's batches: each of its cases is
    an ``error`` row with identity but no fingerprints, shown on the page, and one line in the terminal without a
    traceback; RoPE's cases beside them pass and are stored; exit status 1."""
    write(tmp_path, "shy.py", PROBE_FAILURE)
    db, page = f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "page.html"
    res = run_suite("--plugin", "shy.py", "--encoding", "batch_shy,rope", "--task", "k_back", "--steps", "3", *tiny,
                    "--db", db, "--no-cache", "--report", str(page))  # fmt: skip
    assert res.returncode == 1, res.output
    assert "3 failed, 3 passed" in res.output
    # one line per failed case, besides pytest's short summary (whose FAILED lines are cut to the terminal's width
    # except where pytest believes it runs on CI, as under CI=true)
    assert res.output.splitlines().count(PROBE_LINE) == 3
    assert "Traceback" not in res.output and RAISING_LINE not in res.output
    assert "run 1: 6 results (3 error, 3 ok)" in res.output
    df = results.load(db).sort_values("case_id")
    shy, rope = df[df["encoding"] == "batch_shy"], df[df["encoding"] == "rope"]
    assert list(shy["status"]) == [ResultStatus.ERROR] * 3 and set(shy["message"]) == {PROBE_LINE}
    assert set(shy["encoding_fingerprint"]) == {""} and set(shy["task_fingerprint"]) == {""}
    assert all(shy["config_hash"]) and all(shy["code_version"])
    assert shy["config"].iloc[0]["encoding"]["name"] == "batch_shy"
    assert list(rope["status"]) == [ResultStatus.OK] * 3 and all(rope["encoding_fingerprint"])
    assert PROBE_LINE in page.read_text()


def test_the_traceback_shows_under_verbose_and_the_record_travels_from_xdist_workers(run_suite, tiny, tmp_path):
    write(tmp_path, "shy.py", PROBE_FAILURE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    # run_suite passes -q: -q -vv is pytest's verbosity 1, that of a plain -v
    res = run_suite("-vv", "-n", "2", "--plugin", "shy.py", "--encoding", "batch_shy,rope", "--task", "k_back", "-k",
                    "L64", "--steps", "3", *tiny, "--db", db, "--no-cache")  # fmt: skip
    assert res.returncode == 1, res.output
    assert PROBE_LINE in res.output and "Traceback" in res.output and RAISING_LINE in res.output
    df = results.load(db)
    assert sorted(zip(df["encoding"], df["status"], strict=True)) == [("batch_shy", "error"), ("rope", "ok")]


def test_the_runner_records_where_a_case_failed(isolated, tmp_path, monkeypatch):
    """:meth:`Runner.run` never raises for a case's own failure: in the probe (identity without fingerprints), in
    training (past the probe: fingerprints kept), in evaluation; each with its line and traceback."""
    plugins.load(str(write(tmp_path, "shy.py", PROBE_FAILURE)))
    runner = Runner(Settings(device="cpu", d_model=16, n_heads=2, n_layers=1, steps=3, batch_size=8, eval_samples=8))
    case = Case("batch_shy", "k_back", 64)
    probe = runner.run(case)
    assert (probe.status, probe.message) == (ResultStatus.ERROR, PROBE_LINE)
    assert RAISING_LINE in probe.metrics["traceback"] and probe.train_steps is None
    assert (probe.encoding_fingerprint, probe.task_fingerprint, probe.fingerprints) == ("", "", [])
    assert probe.config_hash == config_hash(runner.describe(case))
    assert probe.code_version == code_version(encodings.get("batch_shy"), tasks.get("k_back"))
    trained = runner.run(Case("train_shy", "k_back", 64))
    assert trained.message == ("train_shy on k_back failed in training: ValueError: train_shy trains on at most 4 "
                               "sequences, got 8")  # fmt: skip
    assert trained.encoding_fingerprint and trained.task_fingerprint

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no memory left\nfor the second line")

    monkeypatch.setattr("pebench.engine.runner.evaluate_case", broken)
    evaluated = runner.run(Case("alibi", "k_back", 64))
    assert evaluated.message == ("alibi on k_back failed in evaluation: RuntimeError: no memory left for the second "
                                 "line")  # fmt: skip
    assert evaluated.train_steps == 3 and evaluated.status == ResultStatus.ERROR


def test_a_case_whose_configuration_cannot_be_built_keeps_a_partial_identity(isolated, tmp_path, monkeypatch):
    plugins.load(str(write(tmp_path, "shy.py", PROBE_FAILURE)))
    runner = Runner(Settings(device="cpu", d_model=16, n_heads=2, n_layers=1, steps=3, batch_size=8, eval_samples=8))

    def broken(*args: object, **kwargs: object) -> None:
        raise TypeError("an option the constructor does not take")

    monkeypatch.setattr("pebench.engine.identity.describe", broken)
    record = runner.run(Case("batch_shy", "k_back", 64))
    assert record.message == ("batch_shy on k_back failed building its configuration: TypeError: an option the "
                              "constructor does not take")  # fmt: skip
    assert record.config["encoding"] == {"name": "batch_shy", "version": encodings.get("batch_shy").version}
    assert record.config_hash and record.code_version and not record.encoding_fingerprint


def test_a_case_failing_in_the_halvings_short_runs_is_stored(run_suite, tiny, tmp_path):
    """``--lr-halving`` trains a cell's short runs before its case: a plugin raising there (on training batches the
    preflight and the probe never use) is each case's ``error`` row too, one line, no traceback; RoPE's pass."""
    write(tmp_path, "shy.py", PROBE_FAILURE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    res = run_suite("--lr-halving", "--plugin", "shy.py", "--encoding", "train_shy,rope", "--task", "k_back", "-k",
                    "L64", *tiny, "--steps", "4", "--db", db, "--no-cache")  # fmt: skip
    assert res.returncode == 1, res.output
    line = "train_shy on k_back failed in the learning-rate halving's short runs: ValueError: "
    assert line in res.output and "Traceback" not in res.output
    df = results.load(db)
    shy, rope = df[df["encoding"] == "train_shy"], df[df["encoding"] == "rope"]
    assert len(shy) == 2 and set(shy["status"]) == {ResultStatus.ERROR}
    assert all(m.startswith(line) for m in shy["message"])
    assert len(rope) == 2 and set(rope["status"]) == {ResultStatus.OK}
