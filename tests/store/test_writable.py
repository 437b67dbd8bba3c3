"""The preflight's write checks (:mod:`pebench.store.writable`) leave nothing behind: the database probe's write is
rolled back on SQLite and PostgreSQL (no table, no row, no sequence moved), the file and directory probes remove what
they create, and an existing output file keeps its content. (Read-only cases, refused in one line: the battery in
tests/suite/test_preflight.py.)"""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect, text

from pebench import store
from pebench.errors import PebenchError
from pebench.store.writable import check_database, check_directory, check_file


def _state(url: str) -> tuple[list[str], int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        tables = sorted(inspect(conn).get_table_names())
        rows = conn.execute(text("select count(*) from fingerprints")).scalar() if "fingerprints" in tables else -1
    engine.dispose()
    return tables, int(rows or 0)


def test_the_database_probe_writes_and_rolls_back(db_url):
    check_database(db_url)  # an empty database: a table created, rolled back
    assert _state(db_url)[0] in ([], ["sqlite_sequence"])
    engine = store.open_db(db_url)
    before = _state(db_url)
    check_database(db_url)  # pebench's tables: a fingerprint row added and runs updated, rolled back
    assert _state(db_url) == before
    run = store.start_run(engine, {"package_version": "0", "torch_version": "t", "python_version": "3",
                                   "device": "cpu", "host": "h"})  # fmt: skip
    engine.dispose()
    assert run == 1  # no sequence moved by the probes


def test_a_new_sqlite_file_is_not_created_by_the_probe(tmp_path):
    check_database(f"sqlite:///{tmp_path / 'new.db'}")
    assert not any(tmp_path.iterdir())


def test_the_file_and_directory_probes_leave_nothing(tmp_path):
    page = tmp_path / "page.html"
    check_file(page, "--report")
    check_directory(tmp_path / "a" / "b", "--cache-dir")
    assert not any(tmp_path.iterdir())
    page.write_text("mine")
    check_file(page, "--report")
    assert page.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]


@pytest.mark.parametrize(
    ("make", "call", "message"),
    [
        (lambda d: (d / "x").mkdir(), lambda d: check_file(d / "x", "-o"),
         "-o '{d}/x' is a directory: give a file name"),
        (lambda d: None, lambda d: check_file(d / "no" / "x.html", "-o"), "-o '{d}/no/x.html': directory {d}/no does "
                                                                         "not exist"),
        (lambda d: (d / "f").write_text(""), lambda d: check_directory(d / "f" / "c", "--cache-dir"),
         "--cache-dir '{d}/f/c': {d}/f is a file, not a directory"),
    ],
)  # fmt: skip
def test_paths_that_cannot_be_written_whoever_runs_are_one_line(tmp_path, make, call, message):
    make(tmp_path)
    with pytest.raises(PebenchError) as err:
        call(tmp_path)
    assert str(err.value) == message.format(d=tmp_path)
