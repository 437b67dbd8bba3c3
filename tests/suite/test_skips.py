"""Cases whose encoding does not apply to their task (it needs task annotations the task does not provide: Abacus and
position coupling on anything but the addition tasks) are collected as skipped with a one-line reason: they train
nothing, write no result, stay out of the shard balance (shard 1 reports them) and leave a run of only such cases a
passing run of skips, not an error."""

from __future__ import annotations

import sqlite3

from pebench.store.load import load

REASON = "abacus needs digit_index annotations, which task k_back does not provide"


def test_inapplicable_cases_are_collected_as_skips(run_suite, tmp_path):
    db = f"sqlite:///{tmp_path / 'c.db'}"
    proc = run_suite("--collect-only", "--encoding", "abacus", "--task", "k_back,addition", "--db", db, inprocess=True)
    assert proc.returncode == 0, proc.output
    ids = [line.split("[", 1)[1].rstrip("]") for line in proc.stdout.splitlines() if "::test_case[" in line]
    assert ids == [*(f"abacus-k_back-L{n}" for n in (64, 128, 256)),
                   *(f"abacus-addition-L{n}" for n in (3, 4, 6, 12, 15))]  # fmt: skip
    shards = []
    for i in (1, 2):
        out = run_suite("--collect-only", "--encoding", "abacus,rope", "--task", "k_back,addition", "--shard",
                        f"{i}/2", "--db", db, inprocess=True)  # fmt: skip
        assert out.returncode == 0, out.output
        shards.append({line.split("[", 1)[1].rstrip("]") for line in out.stdout.splitlines() if "::test_case[" in line})
    assert not shards[0] & shards[1]
    assert {f"abacus-k_back-L{n}" for n in (64, 128, 256)} <= shards[0]  # the skipped cases: shard 1 only
    assert len(shards[0] | shards[1]) == 3 + 5 + 3 + 5


def test_a_run_skips_them_and_runs_the_rest(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    proc = run_suite("--encoding", "abacus,coupling", "--task", "k_back,addition", "-k", "L64 or L3", "--steps", "2",
                     "--db", url, "--no-cache", "-rs", *tiny, inprocess=True)  # fmt: skip
    assert proc.returncode == 0, proc.output
    assert "2 passed, 2 skipped" in proc.stdout
    assert REASON in proc.stdout
    assert "coupling needs coupled_position annotations, which task k_back does not provide" in proc.stdout
    df = load(url)
    assert sorted(df["case_id"]) == ["abacus-addition-L3", "coupling-addition-L3"]
    assert set(df["status"]) == {"ok"}
    assert "run 1: 2 results (2 ok)" in proc.stdout


def test_a_run_of_only_skips_passes_and_writes_no_run(run_suite, tiny, tmp_path):
    path = tmp_path / "s.db"
    proc = run_suite("--encoding", "abacus", "--task", "k_back", "--db", f"sqlite:///{path}", "-rs", *tiny,
                     inprocess=True)  # fmt: skip
    assert proc.returncode == 0, proc.output
    assert "3 skipped" in proc.stdout and REASON in proc.stdout
    assert "pebench: scores" not in proc.stdout
    assert sqlite3.connect(path).execute("select count(*) from runs").fetchone()[0] == 0
