"""Read-only where only reading (issue 86): a command that only reads opens its database with
:func:`pebench.store.database.open_readonly` -- nothing can be written, created, migrated or switched to WAL mode, and
no file is left beside it -- and the reference shipped in the package is stored in rollback-journal mode and opened
``immutable``, so a read-only install reads it. (The installed wheel in a read-only directory, run as an unprivileged
user: tests/test_readonly_install.py.)"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from pebench import store
from pebench.errors import DatabaseError
from pebench.store import database

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu", "host": "h"}


def _listing(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def _pebench_db(path: Path, journal: str = "wal") -> str:
    """A pebench database with one finished run at ``path``, in journal mode ``journal``; its URL."""
    url = f"sqlite:///{path}"
    engine = store.open_db(url)
    store.finish_run(engine, store.start_run(engine, RUN), "finished")
    engine.dispose()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA journal_mode={journal}")
    conn.close()
    return url


def _journal(path: Path) -> str:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def test_the_shipped_reference_is_not_in_wal_mode():
    """WAL mode needs -shm/-wal files beside the database: a read-only install could not read it, a writable
    checkout would get them. Header bytes 18 and 19 are 1 in rollback-journal mode, 2 in WAL mode."""
    from pebench.analysis.reference import REFERENCE_FILE

    assert REFERENCE_FILE.parent == database.PACKAGE_DATA and database.shipped(REFERENCE_FILE)
    assert REFERENCE_FILE.read_bytes()[18:20] == b"\x01\x01" and not database.in_wal_mode(REFERENCE_FILE)
    before = _listing(REFERENCE_FILE.parent)
    engine = database.open_readonly(f"sqlite:///{REFERENCE_FILE}")
    try:
        assert dict(engine.url.query) == {"mode": "ro", "uri": "true", "immutable": "1"}
        with engine.connect() as conn:
            assert conn.execute(text("select count(*) from runs")).scalar_one() > 0
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "delete"
    finally:
        engine.dispose()
    assert _listing(REFERENCE_FILE.parent) == before  # no -shm, no -wal, no byte changed


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_read_leaves_the_file_as_it_was_and_nothing_beside_it(tmp_path, journal):
    url = _pebench_db(tmp_path / "r.db", journal)
    before = _listing(tmp_path)
    assert before.keys() == {"r.db"}
    engine = database.open_readonly(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("select status from runs")).scalar_one() == "finished"
            with pytest.raises(DBAPIError, match="readonly database"):
                conn.execute(text("update runs set host = 'x'"))
        with pytest.raises(DBAPIError, match="readonly database|not authorized"), engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA journal_mode=WAL" if journal == "delete" else "PRAGMA journal_mode=DELETE")
    finally:
        engine.dispose()
    assert _listing(tmp_path) == before and _journal(tmp_path / "r.db") == journal


def test_a_read_never_writes_on_postgresql_either(db_url):
    engine = store.open_db(db_url)
    store.start_run(engine, RUN)
    engine.dispose()
    engine = database.open_readonly(db_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("select count(*) from runs")).scalar_one() == 1
            if engine.dialect.name != "sqlite":
                with pytest.raises(DBAPIError, match="read-only transaction"):
                    conn.execute(text("update runs set host = 'x'"))
    finally:
        engine.dispose()


def test_a_read_neither_creates_nor_migrates(tmp_path):
    missing = f"sqlite:///{tmp_path / 'new.db'}"
    with pytest.raises(DatabaseError, match="no such database file"):
        database.open_readonly(missing)
    assert list(tmp_path.iterdir()) == []
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(DatabaseError, match="is an empty database"):
        database.open_readonly(f"sqlite:///{empty}")
    assert empty.read_bytes() == b"" and [p.name for p in tmp_path.iterdir()] == ["empty.db"]


def test_a_writer_keeps_the_shipped_files_rollback_journal(tmp_path, monkeypatch):
    """A file of the package's data directory (a reference merged into, a study's write) is not switched to WAL mode
    by a writer; any other new file is."""
    monkeypatch.setattr(database, "PACKAGE_DATA", tmp_path)
    _pebench_db(tmp_path / "reference.db", "delete")
    engine = store.open_db(f"sqlite:///{tmp_path / 'reference.db'}")
    engine.dispose()
    assert _journal(tmp_path / "reference.db") == "delete"
    other = tmp_path / "sub"
    other.mkdir()
    engine = store.open_db(f"sqlite:///{other / 'r.db'}")
    engine.dispose()
    assert _journal(other / "r.db") == "wal"


READ = """
import sys
from sqlalchemy import text
from pebench.errors import PebenchError
from pebench.store.database import open_readonly
try:
    engine = open_readonly(sys.argv[1])
    with engine.connect() as conn:
        print(conn.execute(text("select count(*) from runs")).scalar_one())
    engine.dispose()
except PebenchError as err:
    print(err)
"""


def test_a_read_only_directory_is_read_as_an_unprivileged_user(tmp_path, unprivileged):
    """A database in a directory the reader cannot write: read in rollback-journal mode, leaving nothing; in WAL
    mode (SQLite needs a -shm file beside it) one line saying why and what to do."""
    urls = {j: _pebench_db(tmp_path / f"{j}.db", j) for j in ("delete", "wal")}
    before = _listing(tmp_path)
    tmp_path.chmod(0o555)
    try:
        out = {j: subprocess.run([*unprivileged, sys.executable, "-c", READ, url], capture_output=True, text=True,
                                 timeout=120, check=True).stdout.strip() for j, url in urls.items()}  # fmt: skip
    finally:
        tmp_path.chmod(0o755)
    assert out["delete"] == "1"
    assert out["wal"] == (f"--db '{urls['wal']}' is not a usable database: attempt to write a readonly database (it "
                          f"is in WAL mode, which needs a -shm file beside it, and this process cannot write in "
                          f"{tmp_path}: read a copy, or switch it to rollback-journal mode with sqlite3 FILE "
                          "'PRAGMA journal_mode=DELETE')")  # fmt: skip
    assert _listing(tmp_path) == before
