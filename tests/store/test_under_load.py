"""Two suite processes writing one database at the same moment, five times over, with one process killed (-9)
midway (issue 33, item 6): on a SQLite file and on a real PostgreSQL server. Every finished run has all its rows and
no case twice, the killed run shows as ``interrupted`` with the rows it wrote, and ``--reuse`` then copies exactly
those and computes only the missing ones."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from pebench.store.load import load, runs

pytestmark = pytest.mark.slow  # the inner loop (-m "not slow") leaves this module out

ROOT = Path(__file__).resolve().parents[2]
TINY = ("--d-model", "16", "--layers", "1", "--heads", "2", "--batch-size", "8", "--eval-samples", "8")
ROUNDS = 5


def start(url: str, cache: Path, encodings: str, *extra: str) -> subprocess.Popen:
    """``pytest suite`` on k_back at its training length (one case per encoding) as its own process."""
    env = {k: v for k, v in os.environ.items() if k != "PEBENCH_DB" and not k.startswith("PYTEST_XDIST_")}
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suite"), "-p", "no:cacheprovider", "-q", "--encoding",
           encodings, "--task", "k_back", "-k", "L64", "--steps", "20", "--db", url, "--cache-dir", str(cache),
           "--lr-sweep", "off", *TINY, *extra]
    return subprocess.Popen(cmd, cwd=cache.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # fmt: skip


def rows(url: str, sql: str) -> list[tuple]:
    engine = create_engine(url)
    try:
        with engine.connect() as con:
            return [tuple(r) for r in con.execute(text(sql)).all()]
    finally:
        engine.dispose()


def kill_after_first_result(url: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """SIGKILL ``proc`` as soon as its run has written its first result (its second model is training then)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = rows(url, f"select count(*) from results r join runs u on u.id = r.run_id where u.pid = {proc.pid}")
        except Exception:  # the tables may not exist yet
            found = [(0,)]
        if found[0][0] > 0:
            os.kill(proc.pid, signal.SIGKILL)
            return
        if proc.poll() is not None:
            raise AssertionError(f"the process to kill ended first:\n{proc.stdout.read()}")  # type: ignore[union-attr]
        time.sleep(0.05)
    raise AssertionError("no result appeared in time")


def test_two_processes_at_once_five_times_and_a_kill(db_url: str, tmp_path: Path) -> None:
    url = db_url
    killed_pid = None
    for i in range(ROUNDS):
        a = start(url, tmp_path / f"cache-a{i}", "rope,alibi")
        if i == 2:  # this round's second process runs two other encodings and is killed after its first result
            b = start(url, tmp_path / "cache-killed", "fire,kerple", "--no-cache")
            kill_after_first_result(url, b)
            killed_pid = b.pid
        else:
            b = start(url, tmp_path / f"cache-b{i}", "rope,alibi")
        out_a, _ = a.communicate(timeout=600)
        out_b, _ = b.communicate(timeout=600)
        assert a.returncode == 0, out_a
        assert b.returncode == (-signal.SIGKILL if i == 2 else 0), out_b
    engine = create_engine(url)
    try:
        listed = runs(engine)
    finally:
        engine.dispose()
    assert len(listed) == 2 * ROUNDS
    killed = [r for r in listed if r["pid"] == killed_pid]
    assert len(killed) == 1 and killed[0]["status"] == "interrupted"
    assert all(r["status"] == "finished" for r in listed if r["pid"] != killed_pid)
    assert rows(url, "select run_id, case_id, count(*) from results group by run_id, case_id having count(*) > 1") == []
    per_run = dict(rows(url, "select run_id, count(*) from results group by run_id"))
    for r in listed:
        if r["pid"] != killed_pid:
            assert per_run[r["id"]] == 2, r  # rope and alibi
    written = per_run.get(killed[0]["id"], 0)
    assert written == 1  # fire's; kerple was training

    # --reuse copies what the killed run wrote and computes only the rest
    again = start(url, tmp_path / "cache-reuse", "fire,kerple", "--reuse")
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out
    assert "pebench --reuse: 1 of 2 results copied" in out
    last = load(url, run="latest")
    assert len(last) == 2 and last.set_index("encoding")["reused_from"].notna().to_dict() == {"fire": True,
                                                                                                  "kerple": False}
