"""A run's life: a run whose process is gone is interrupted; latest / previous are finished runs; --baseline
previous is the most comparable finished run; the heartbeat is renewed -- on SQLite and PostgreSQL."""

import datetime as dt
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pebench import store
from pebench.cli import main as cli_main
from pebench.errors import DatabaseError
from pebench.store.lifecycle import STALE_S, comparable_run, effective_status, mark_interrupted, resolve_run_id
from pebench.store.load import load, runs
from pebench.store.schema import utcnow
from pebench.suite.writer import Heartbeat

ROOT = Path(__file__).resolve().parents[2]
HOST = socket.gethostname()
RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu", "host": HOST}


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def _run(engine, status: str, models=(("rope", "k_back", "h"),), **info) -> int:
    run_id = store.start_run(engine, {**RUN, **info})
    for i, (enc, task, cfg) in enumerate(models):
        store.add_result(engine, run_id, {"case_id": f"{enc}-{task}-{i}", "encoding": enc, "encoding_version": "1",
                                          "task": task, "task_version": "1", "train_length": 64, "eval_length": 64,
                                          "seed": 0, "config": {}, "config_hash": cfg, "score": 0.5})  # fmt: skip
    if status != "running":
        store.finish_run(engine, run_id, status)
    return run_id


def test_effective_status_from_pid_and_heartbeat():
    now = utcnow()
    fresh, stale = now - dt.timedelta(seconds=5), now - dt.timedelta(seconds=STALE_S + 1)
    row = {"status": "running", "host": HOST, "pid": os.getpid(), "heartbeat_at": fresh, "started_at": fresh}
    assert effective_status(row, now) == "running"
    assert effective_status({**row, "pid": _dead_pid()}, now) == "interrupted"  # same host, process gone
    assert effective_status({**row, "host": "elsewhere", "pid": 1}, now) == "running"  # cannot see its pid
    assert effective_status({**row, "host": "elsewhere", "heartbeat_at": stale}, now) == "interrupted"
    old = {**row, "pid": None, "heartbeat_at": None, "started_at": stale}  # a run from before heartbeats
    assert effective_status(old, now) == "interrupted"
    assert effective_status({**row, "status": "failed"}, now) == "failed"


def test_a_killed_writer_leaves_an_interrupted_run(db_url, capsys):
    """A process starts a run and dies without finishing it: readers see it interrupted (without writing), the next
    writer records it so."""
    code = ("import os, sys; from pebench import store; e = store.open_db(sys.argv[1]); "
            f"store.start_run(e, {RUN!r}); os._exit(9)")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code, db_url], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 9, proc.stderr
    engine = store.open_db(db_url, create=False)
    assert [r["status"] for r in runs(engine)] == ["interrupted"]
    assert cli_main(["results", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "interrupted" in out.splitlines()[1]
    from sqlalchemy import text

    with engine.connect() as conn:  # shown, not written, by the readers
        assert conn.execute(text("select status from runs")).scalar_one() == "running"
    assert mark_interrupted(engine) == [1]
    with engine.connect() as conn:
        assert conn.execute(text("select status from runs")).scalar_one() == "interrupted"
    engine.dispose()


def test_latest_and_previous_are_finished_runs(db_url):
    engine = store.open_db(db_url)
    first = _run(engine, "finished")
    second = _run(engine, "finished")
    _run(engine, "failed")
    _run(engine, "running", pid=_dead_pid())  # killed
    _run(engine, "interrupted")
    running = _run(engine, "running")  # this process: still running
    assert resolve_run_id(engine, "latest") == second and resolve_run_id(engine, "previous") == first
    assert resolve_run_id(engine, running) == running  # any run by its id
    assert load(db_url, "latest")["run_id"].unique().tolist() == [second]
    engine.dispose()


def test_no_finished_run_is_an_error_naming_the_statuses(db_url):
    engine = store.open_db(db_url)
    _run(engine, "running", pid=_dead_pid())
    _run(engine, "running")
    with pytest.raises(DatabaseError, match=r"has 0 finished \(runs: 1 interrupted, 1 running\); give a run id"):
        resolve_run_id(engine, "latest")
    engine.dispose()


def test_baseline_previous_is_the_most_comparable_finished_run(db_url):
    engine = store.open_db(db_url)
    grid = [("rope", "k_back", "h1"), ("alibi", "k_back", "h2"), ("rope", "copy", "h3")]
    full_old = _run(engine, "finished", grid)
    full_new = _run(engine, "finished", grid)
    _run(engine, "finished", grid[:1])  # a one-case --lf rerun, newest
    _run(engine, "finished", [("rope", "k_back", "other-config")] * 3)  # other settings
    _run(engine, "running", grid, pid=_dead_pid())  # killed, complete
    _run(engine, "failed", grid)
    assert comparable_run(engine, grid) == full_new
    assert comparable_run(engine, grid[:1]) > full_new  # for one case, the newest run holding it
    store.finish_run(engine, full_new, "failed")
    assert comparable_run(engine, grid) == full_old
    engine.dispose()


def test_the_heartbeat_is_renewed_while_the_run_lasts(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    engine = store.open_db(url)
    run_id = _run(engine, "running")
    first = runs(engine)[0]["heartbeat_at"]
    beat = Heartbeat(engine, run_id, every=0.05)
    time.sleep(1.2)  # datetimes of a second's resolution on some backends
    beat.stop()
    assert runs(engine)[0]["heartbeat_at"] > first
    assert not beat._thread.is_alive()
    engine.dispose()
