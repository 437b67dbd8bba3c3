"""Whether pebench can write where it is asked to, found out before anything is trained or written: a real write
that leaves nothing behind.

* an output file (``--report``, ``pebench report -o`` and ``--png``): a probe file is created and removed in its
  directory, and an existing one is opened for appending, its content untouched (:func:`check_file`);
* a directory that pebench will create files in (``--cache-dir``, ``pebench new --dir``): a probe file is created and
  removed in it, or in the nearest existing directory above it when it does not exist yet, where pebench would
  create it (:func:`check_directory`);
* a results database (``--db``, :func:`check_database`): a write in a transaction that is rolled back -- a table
  created in SQLite (an existing file; for a new one, its directory is probed as above), a row added to
  ``fingerprints`` and an update of ``runs`` that matches nothing in any other database that holds pebench's tables
  (PostgreSQL), else a table created. No sequence moves, no row stays, and other writers are not waited for beyond a
  row lock they do not hold.

Each failure is a one-line :class:`~pebench.errors.PebenchError` naming the flag, the path or URL and the reason
(``Permission denied``, ``attempt to write a readonly database``, ``cannot execute INSERT in a read-only
transaction``). The checks hold for the process that runs them: a root process without ``CAP_DAC_OVERRIDE`` (a
container with capabilities dropped) is refused where an unprivileged user is.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from pathlib import Path

from sqlalchemy import create_engine, false, insert, inspect, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from pebench.errors import PebenchError
from pebench.store.database import error_line, safe_url
from pebench.store.schema import Fingerprint, Run

PROBE = ".pebench-write-probe"


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__


def _probe(directory: Path) -> None:
    """Create and remove a probe file in ``directory`` (OSError when this process may not)."""
    probe = directory / f"{PROBE}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    with probe.open("xb"):
        pass
    probe.unlink()


def check_file(path: Path | str, flag: str) -> None:
    """Refuse in one line an output file ``path`` (given as ``flag``) that cannot be written: a directory, a file in
    a directory that does not exist or that this process may not create files in (pages are written to a temporary
    file beside them, then renamed), an existing file it may not write."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise PebenchError(f"{flag} {str(path)!r} is a directory: give a file name")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise PebenchError(f"{flag} {str(path)!r}: directory {parent} does not exist")
    try:
        _probe(parent)
        if path.exists():
            with path.open("ab"):  # appending nothing: the content stays as it is
                pass
    except OSError as err:
        raise PebenchError(f"{flag} {str(path)!r} cannot be written: {_reason(err)} (in {parent}); give a path you "
                           "can write to") from None  # fmt: skip


def check_directory(path: Path | str, flag: str) -> None:
    """Refuse in one line a directory ``path`` (given as ``flag``) that pebench cannot create files in: a probe file
    is created and removed in it, or, when it does not exist yet, in the nearest existing directory above it (where
    pebench creates it); an existing file in its place is refused too."""
    path = Path(path).expanduser().absolute()
    here = path
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise PebenchError(f"{flag} {str(path)!r}: {here} is a file, not a directory")
    try:
        _probe(here)
    except OSError as err:
        what = "" if here == path else f" (it would be created in {here})"
        raise PebenchError(f"{flag} {str(path)!r} cannot be written: {_reason(err)}{what}; give a directory you can "
                           "write to") from None  # fmt: skip


def check_database(url: str, flag: str = "--db") -> None:
    """Refuse in one line a results database at ``url`` that this process cannot write to (see the module
    docstring): the write a run makes, rolled back."""
    shown = safe_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            return
        path = Path(parsed.database).expanduser()
        if not path.exists():
            check_directory(path.parent, f"{flag} {shown!r}: its directory")
            return
        try:
            _sqlite_write(path)
        except sqlite3.Error as err:
            raise PebenchError(f"{flag} {shown!r} cannot be written: {err} (file {path.resolve()}); give a database "
                               "you can write to") from None  # fmt: skip
        return
    engine = create_engine(parsed)
    try:
        with engine.connect() as conn:
            tx = conn.begin()
            try:
                if inspect(conn).has_table(Fingerprint.__tablename__):
                    conn.execute(insert(Fingerprint).values(digest=f"{PROBE}-{uuid.uuid4().hex}", kind="probe",
                                                            name="probe", options={}, values={}))  # fmt: skip
                    conn.execute(update(Run).where(false()).values(status=Run.status))
                else:
                    conn.exec_driver_sql(f"CREATE TABLE pebench_write_probe_{uuid.uuid4().hex[:12]} (x INTEGER)")
            finally:
                tx.rollback()
    except sa_exc.SQLAlchemyError as err:
        raise PebenchError(f"{flag} {shown!r} cannot be written: {error_line(err)}; give a database you can write "
                           "to") from None  # fmt: skip
    finally:
        engine.dispose()


def check_sqlite_file(url: str, flag: str = "--db") -> None:
    """Refuse in one line an existing SQLite file at ``url`` (or its ``-wal``/``-shm`` file) that this process may not
    write, before anything opens it: SQLite opens such a file read-only without a word and leaves read-only
    ``-wal``/``-shm`` files beside it. Other URLs and new files: nothing to do here (:func:`check_database`)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return
    path = Path(parsed.database).expanduser()
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if not file.is_file():
            continue
        try:
            with file.open("r+b"):  # opened for writing, nothing written
                pass
        except OSError as err:
            raise PebenchError(f"{flag} {safe_url(url)!r} cannot be written: {_reason(err)} (file {file.resolve()}); "
                               "give a database you can write to") from None  # fmt: skip


def _sqlite_write(path: Path) -> None:
    """A table created in the SQLite file ``path`` inside a transaction that is rolled back (the file is left as it
    was); waits for another writer's lock as long as pebench's own writes do."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=30, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(f"CREATE TABLE pebench_write_probe_{uuid.uuid4().hex[:12]} (x INTEGER)")
        finally:
            conn.execute("ROLLBACK")
    finally:
        conn.close()
