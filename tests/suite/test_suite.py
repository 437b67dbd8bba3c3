"""The suite end to end, in subprocesses: parametrization, tiers, the database, xdist, bad input, divergence."""

import sqlite3

import pytest

from pebench.store.load import load


def collected_ids(run_suite, tmp_path, tiny, *args: str) -> list[str]:
    """The ids ``--collect-only`` lists. At the ``tiny`` model: an id does not depend on the model's size, and the
    time estimate that a collection prints times a few training steps of each configuration new to the machine
    (about 80 at the default size for the quick tier of every encoding and task: most of this test's time)."""
    proc = run_suite("--collect-only", "--db", f"sqlite:///{tmp_path / 'c.db'}", *tiny, *args, inprocess=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [line.split("[", 1)[1].rstrip("]") for line in proc.stdout.splitlines() if "::test_case[" in line]


def test_ids_and_tiers(run_suite, tiny, tmp_path):
    from pebench import encodings, tasks

    quick = collected_ids(run_suite, tmp_path, tiny)
    expected = [
        f"{e}-{t}-L{n}" for e in encodings.available() for t in tasks.available() for n in tasks.build(t).eval_lengths()
    ]
    assert quick == expected
    assert "alibi-k_back-L256" in quick
    two = ("--encoding", "alibi,rope")  # the full tier has thousands of cases per encoding: two are enough here
    some = (*two, "--task", "k_back,sort,lm")  # and three tasks (lm's full tier has its own lengths)
    full = collected_ids(run_suite, tmp_path, tiny, "--tier", "full", *some)
    assert {i for i in quick if i.split("-")[0] in ("alibi", "rope") and i.split("-")[1] in ("k_back", "sort", "lm")
            } < set(full)  # fmt: skip
    assert collected_ids(run_suite, tmp_path, tiny, "-m", "full", *some) == full
    assert collected_ids(run_suite, tmp_path, tiny, "-k", "alibi and k_back", *two) == [
        "alibi-k_back-L64",
        "alibi-k_back-L128",
        "alibi-k_back-L256",
    ]
    seeds = collected_ids(run_suite, tmp_path, tiny, "--seeds", "2", "--encoding", "rope", "-k", "k_back and L64")
    assert seeds == ["rope-k_back-L64-s0", "rope-k_back-L64-s1"]


def test_cases_write_results_and_reuse_the_model(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    args = ["--encoding", "rope", "-k", "k_back", "--steps", "3", "--db", url, "--cache-dir", str(tmp_path / "ckpt"),
            *tiny]
    proc = run_suite(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout
    df = load(url)
    assert sorted(df["eval_length"]) == [64, 128, 256]
    assert set(df["status"]) == {"ok"}
    # one training shared by the three lengths
    assert sorted(df["model_reused"]) == [False, True, True]
    assert df["train_steps"].tolist() == [3, 3, 3]
    assert df["config_hash"].nunique() == 1
    for col in ("token_accuracy", "sequence_accuracy", "loss", "chance_level", "tokens_per_s", "final_train_loss"):
        assert df[col].notna().all(), col
    row = df.iloc[0]
    assert row["config"]["model"]["d_model"] == 16 and row["config"]["train"]["steps"] == 3
    assert row["run_torch_version"] and row["run_python_version"] and row["run_device"].startswith("cpu")
    assert row["run_status"] == "finished" and row["run_options"]["steps"] == 3
    con = sqlite3.connect(tmp_path / "r.db")
    assert con.execute("select count(*) from curve_points").fetchone()[0] >= 3

    # a second session: a new run, the first untouched, the model loaded from its checkpoint
    proc = run_suite(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    df2 = load(url)
    assert df2["run_id"].nunique() == 2 and len(df2) == 6
    latest = load(url, run="latest")
    assert latest["model_reused"].all()
    first = df2[df2["run_id"] == df2["run_id"].min()]
    assert first.reset_index(drop=True)[["case_id", "score"]].equals(df[["case_id", "score"]])


def test_no_row_lost_with_two_xdist_workers(run_suite, tiny, tmp_path):
    pytest.importorskip("xdist")
    url = f"sqlite:///{tmp_path / 'x.db'}"
    names = ["k_back", "long_range_match", "modular_sum", "shift_invariant"]
    encs = ["abacus", "alibi", "coupling", "fire", "learned", "nope", "path", "rope"]  # 24 cases on two workers
    proc = run_suite(
        "-n", "2", "-k", "L64", "--task", ",".join(names), "--encoding", ",".join(encs),
        "--task-options", "modular_sum:train_length=32", "--steps", "2", "--db", url, "--no-cache", *tiny,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from pebench import encodings, tasks

    # every encoding that applies to the task (abacus and coupling need digit annotations: skipped, no row)
    expected = {f"{e}-{t}-L64" for e in encs for t in names if encodings.not_applicable(e, tasks.get(t)) is None}
    assert len(expected) == 24
    df = load(url)
    assert set(df["case_id"]) == expected
    assert len(df) == len(expected)
    assert df["run_id"].nunique() == 1


def test_divergence_is_recorded_and_the_suite_goes_on(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'd.db'}"
    proc = run_suite(
        "-k", "sinusoidal and k_back and L64", "--lr", "1e30", "--steps", "20", "--db", url, "--no-cache", *tiny,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 xfailed" in proc.stdout
    df = load(url)
    assert df["status"].tolist() == ["diverged"]
    assert "non-finite" in df["message"][0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--encoding", "bogus"], "unknown encoding 'bogus'; valid encodings: abacus, alibi, "),
        (["--task", "nosuch"], "unknown task 'nosuch'; valid tasks: "),
        (["--encoding-options", "rope:colour=red"], "unknown option 'colour'"),
        (["--encoding-options", "rope:base=-3"], "option base='-3' is out of range"),
        (["--steps", "0"], "--steps must be a positive integer"),
        (["--d-model", "30", "--heads", "4"], "must be divisible by --heads"),
        (["--device", "tpu9"], "unknown device"),
        (["--db", "sqlite:////no/such/dir/r.db"], "does not exist"),
        (["--task-options", "lm:corpus=/no/such/dir"], "corpus '/no/such/dir' is not a directory with train.txt"),
        (["--lr", "inf"], "--lr must be a positive finite number, got inf"),
        (["--weight-decay", "-1"], "--weight-decay must be 0 or more and finite, got -1.0"),
        (["--d-model", "36", "--heads", "4", "--encoding", "rope"],
         "encoding rope cannot be built with --d-model 36 --heads 4 (head dim 9): rope: head_dim must be even"),
        (["--task-options", "k_back:k=1000"], "task k_back: length 64 is too short; valid lengths: >= 1001"),
        (["--task-options", "assoc_recall:n_pairs=1000,n_keys=2000", "--task", "assoc_recall"],
         "task assoc_recall: length 32 is too short"),
        (["--encoding", "rope,rope"], "encoding 'rope' is listed twice in 'rope,rope'"),
        (["--encoding", ","], "',' names no encoding; valid encodings: abacus, alibi, "),
    ],
)
def test_bad_input_is_one_line_before_training(run_suite, tiny, tmp_path, args, message):
    proc = run_suite("-k", "k_back and L64", *args)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    err = proc.stderr.strip().splitlines()
    assert any(message in line for line in err), proc.stderr
    assert "Traceback" not in proc.stderr and "passed" not in proc.stdout


def test_not_a_database_file(run_suite, tiny, tmp_path):
    bogus = tmp_path / "bogus.db"
    bogus.write_text("hello " * 500)
    proc = run_suite("-k", "k_back and L64", "--db", f"sqlite:///{bogus}")
    assert proc.returncode == 4
    assert "not a usable database" in proc.stderr
    assert bogus.read_text().startswith("hello")
