"""What the suite does to the file system and the database (issue 33): a database lacking columns is refused before
any training; a result the database refuses fails its case and the run, and its trained model stays for a rerun; dry
runs and refused options write nothing; and every session disposes its engines, so only the database file remains."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from pebench import store
from pebench.store.database import safe_url
from pebench.store.schema import HEAD_REVISION

LEGACY = Path(__file__).resolve().parents[1] / "store" / "data" / "legacy-0002.db"
CASE = ("-k", "rope and k_back and L64", "--encoding", "rope", "--task", "k_back", "--steps", "3")
READ_ONLY = "results are read-only here"
SEEDS = "valid: a positive integer (e.g. 3), auto (at most 5 seeds) or auto:N (at most N seeds)"


def listing(root: Path) -> dict[str, str]:
    """Every file and directory under ``root`` with a hash of its content: what a write would change."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}  # fmt: skip


def _sql(url: str, *statements: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        for sql in statements:
            conn.execute(text(sql))
    engine.dispose()


def _refuse_results(url: str) -> None:
    """A trigger that makes the database refuse every new result (the tables and columns are all there)."""
    if url.startswith("sqlite"):
        _sql(url, f"create trigger refuse before insert on results begin select raise(abort, '{READ_ONLY}'); end")
    else:
        _sql(url, f"create function refuse() returns trigger language plpgsql as $$ begin raise exception "
                  f"'{READ_ONLY}'; end $$",
             "create trigger refuse before insert on results for each row execute function refuse()")  # fmt: skip


def _rows(url: str, sql: str) -> list[tuple]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(text(sql))]
    engine.dispose()
    return rows


def test_a_database_lacking_columns_stops_the_suite_before_training(run_suite, tiny, tmp_path, db_url):
    engine = store.open_db(db_url)
    engine.dispose()
    _sql(db_url, "alter table results drop column tokens_per_s")
    before = listing(tmp_path), _rows(db_url, "select count(*) from runs")
    proc = run_suite(*CASE, *tiny, "--db", db_url, "--cache-dir", str(tmp_path / "c"))
    shown = safe_url(db_url)
    assert proc.returncode == 4, proc.output
    assert proc.stderr.strip().splitlines() == [
        f"ERROR: --db '{shown}' is a pebench database at schema revision {HEAD_REVISION} whose tables lack "
        "results.tokens_per_s (hand-edited, or written by another tool); pebench neither reads nor writes it: "
        f"restore what it lacks or give a new file (pebench db status --db '{shown}' says what it holds)"
    ]
    assert "passed" not in proc.stdout and not (tmp_path / "c").exists()  # nothing trained
    after = {k: v for k, v in listing(tmp_path).items() if not k.startswith(".benchmarks")}  # pytest-benchmark's
    assert (after, _rows(db_url, "select count(*) from runs")) == before


def test_a_result_the_database_refuses_fails_its_case_and_the_run(run_suite, tiny, tmp_path, db_url):
    """The write fails after training (a trigger refuses the row): the case fails with one line, the run ends
    failed, the checkpoint stays, and a rerun with --reuse loads it instead of training; only the database file is
    left beside it (the engines are disposed)."""
    sqlite = db_url.startswith("sqlite")
    url = f"sqlite:///{tmp_path / 'db' / 'r.db'}" if sqlite else db_url
    if sqlite:
        (tmp_path / "db").mkdir()
    store.open_db(url).dispose()
    _refuse_results(url)
    args = (*CASE, *tiny, "--db", url, "--cache-dir", str(tmp_path / "c"))
    proc = run_suite(*args)
    assert proc.returncode == 1, proc.output
    line = (f"pebench: the result of rope-k_back-L64 (seed 0) was not written to {safe_url(url)}: {READ_ONLY}; "
            f"the run ends failed, and its trained model stays in {tmp_path / 'c'}, so a rerun (e.g. with --reuse) "
            "does not train it again")  # fmt: skip
    assert line in proc.stdout.splitlines() and "1 failed" in proc.stdout and "passed" not in proc.stdout
    assert "INTERNALERROR" not in proc.output
    assert _rows(url, "select id, status from runs") == [(1, "failed")]
    assert _rows(url, "select count(*) from results") == [(0,)]
    assert len(list((tmp_path / "c").glob("rope-k_back-s0-*.pt"))) == 1
    if sqlite:
        assert listing(tmp_path / "db").keys() == {"r.db"}

    _sql(url, "drop trigger refuse" if sqlite else "drop trigger refuse on results")
    pytest.importorskip("xdist")
    proc = run_suite(*args, "--reuse", "-n", "2")  # the lookup's engines in the workers are disposed too
    assert proc.returncode == 0, proc.output
    assert "pebench --reuse: 0 of 1 results copied" in proc.stdout  # no result to copy: the checkpoint is loaded
    assert _rows(url, "select run_id, model_reused, reused_from, train_steps from results") == [(2, True, None, 3)]
    assert _rows(url, "select id, status from runs") == [(1, "failed"), (2, "finished")]
    if sqlite:
        assert listing(tmp_path / "db").keys() == {"r.db"}


@pytest.mark.parametrize(
    ("args", "returncode", "error"),
    [
        (["--collect-only"], 0, None),
        (["--help"], 0, None),
        (["--markers"], 0, None),
        (["--collect-only", "--baseline", "previous"], 4, "--baseline previous: --db '{db}': no such database file"),
        (["--baseline", "previous"], 4, "--baseline previous: --db '{db}': no such database file"),
        (["--steps", "0"], 4, "--steps must be a positive integer, got 0"),
        (["--seeds", "auto:0"], 4, f"--seeds 'auto:0': the number of seeds must be at least 1; {SEEDS}"),
        (["--report", "/no/such/dir/p.html"], 4, "--report '/no/such/dir/p.html': give a file name in an existing "
                                                 "directory"),
        (["--db", "sqlite:////no/such/dir/r.db"], 4, "--db 'sqlite:////no/such/dir/r.db': directory /no/such/dir "
                                                     "does not exist"),
    ],
)  # fmt: skip
def test_dry_runs_and_refused_options_write_nothing(run_suite, tiny, tmp_path, args, returncode, error):
    """From a project directory (the rootdir, where the default database would go), with a file already in it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine")
    before = listing(tmp_path)
    proc = run_suite("--rootdir", str(project), *CASE, *tiny, *args)
    assert proc.returncode == returncode, proc.output
    if error is not None:
        db = f"sqlite:///{project.resolve() / 'results.db'}"
        assert proc.stderr.strip().splitlines() == [f"ERROR: {error.format(db=db)}"]
    assert listing(tmp_path) == before


def test_collect_only_leaves_an_existing_database_as_it_was(run_suite, tmp_path):
    """An older pebench database is not upgraded by a dry run, and a current one in WAL mode keeps no -wal/-shm."""
    (tmp_path / "old").mkdir()
    shutil.copy(LEGACY, tmp_path / "old" / "r.db")
    (tmp_path / "new").mkdir()
    store.open_db(f"sqlite:///{tmp_path / 'new' / 'r.db'}").dispose()
    for name in ("old", "new"):
        before = listing(tmp_path / name)
        proc = run_suite("--collect-only", *CASE, "--db", f"sqlite:///{tmp_path / name / 'r.db'}")
        assert proc.returncode == 0 and "1/3 tests collected" in proc.stdout, proc.output
        assert "upgraded" not in proc.stderr
        assert listing(tmp_path / name) == before, name


def test_a_usage_error_after_the_database_is_open_disposes_it(run_suite, tiny, tmp_path):
    """An older database is opened (upgraded) before --baseline can be read; a bad baseline then ends the session,
    and the writer's engine is disposed all the same: no -wal or -shm left."""
    (tmp_path / "db").mkdir()
    path = tmp_path / "db" / "r.db"
    shutil.copy(LEGACY, path)
    runs = ", ".join(str(r) for (r,) in _rows(f"sqlite:///{path}", "select id from runs order by id")[-10:])
    proc = run_suite(*CASE, *tiny, "--db", f"sqlite:///{path}", "--baseline", "99")
    assert proc.returncode == 4, proc.output
    assert proc.stderr.strip().splitlines()[-1] == f"ERROR: unknown run id 99; existing runs: {runs}"
    assert listing(tmp_path / "db").keys() == {"r.db"}
