"""Opening the results database and writing to it (the schema is :mod:`pebench.store.schema`).

Writes happen in one transaction per result, so a crash never leaves a half-written result. SQLite databases run
in WAL mode with a busy timeout, so several processes may write to one file. Under pytest-xdist only the controller
process writes (workers hand results over in the test report), see :mod:`pebench.suite.writer`.

A command that only reads opens the database with :func:`open_readonly`: nothing in it can write, create, migrate or
switch the journal mode, and it leaves no file beside the database (:func:`readonly_url`). The reference results
shipped inside the package (:data:`PACKAGE_DATA`) are kept in rollback-journal mode, so a read-only install reads
them: WAL mode would need ``-shm``/``-wal`` files beside them.
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.orm import Session

from pebench.errors import DatabaseError
from pebench.records.record import ResultRecord, curve_row
from pebench.store import migrate
from pebench.store.fingerprints import store_fingerprints
from pebench.store.lifecycle import resolve_run_id  # noqa: F401  (re-exported)
from pebench.store.schema import CurvePoint, Result, Run, utcnow

DB_ENV = "PEBENCH_DB"
ROOT_MARKERS = ("pyproject.toml", "pytest.ini", "tox.ini", "setup.cfg")
PACKAGE_DATA = Path(__file__).resolve().parents[1] / "data"
REFERENCE_FILE = PACKAGE_DATA / "reference.db"
"""The reference results shipped in the package (built last, at the final defaults: issue 29 item 5)."""
REFERENCE_NAME = "reference"
"""``--db reference``: the shipped :data:`REFERENCE_FILE`, for the commands that read (a run never writes it)."""
"""The data shipped inside the package (the reference results, ``reference.db``): a SQLite file here is never
written under a reader, is read from installs the user may not write (opened ``immutable``), and keeps its
rollback journal when a writer opens it (never switched to WAL mode)."""


def project_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` (default: the current one) holding one of pytest's ini files
    (:data:`ROOT_MARKERS`), as pytest picks its rootdir; else ``start`` itself."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if any((d / m).is_file() for m in ROOT_MARKERS):
            return d
    return here


def resolve_url(given: str | None = None, root: Path | None = None, write: bool = False) -> str:
    """The results database URL: ``given`` (``--db``; ``reference``: the shipped :data:`REFERENCE_FILE`, refused when
    the command would ``write`` it), else ``$PEBENCH_DB``, else ``results.db`` in ``root`` (the suite passes pytest's
    rootdir; elsewhere :func:`project_root`). The suite and every ``pebench`` command use this one function, so they
    agree on the default."""
    if given == REFERENCE_NAME:
        if write:
            raise DatabaseError("--db reference is the shipped reference, which this command would write: give "
                                "another --db (--with-reference puts a run's results beside the reference)")
        return f"sqlite:///{REFERENCE_FILE}"
    if given:
        return given
    env = os.environ.get(DB_ENV)
    if env:
        return env
    return f"sqlite:///{(root or project_root()) / 'results.db'}"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


READ_ONLY_DENIED = frozenset({"journal_mode", "locking_mode", "query_only", "writable_schema", "wal_checkpoint"})
"""The pragmas a read-only SQLite connection may not set: ``query_only`` refuses writes to the tables, not a switch of
the journal mode, nor turning itself off."""


def _deny_settings(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    """SQLite's authorizer of a read-only connection: a pragma of :data:`READ_ONLY_DENIED` set is denied."""
    if action == sqlite3.SQLITE_PRAGMA and arg1 in READ_ONLY_DENIED and (arg2 is not None or arg1 == "wal_checkpoint"):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _sqlite_query_only(dbapi_conn: Any, _record: Any) -> None:
    """A read-only engine's SQLite connection refuses every write, a change of its journal mode included."""
    dbapi_conn.execute("PRAGMA query_only=ON")
    dbapi_conn.set_authorizer(_deny_settings)


def _postgres_read_only(dbapi_conn: Any, _record: Any) -> None:
    """A read-only engine's PostgreSQL session runs read-only transactions only (committed at once: the setting
    would go with the rollback the pool makes)."""
    cur = dbapi_conn.cursor()
    cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    cur.close()
    dbapi_conn.commit()


def _wal(engine: Engine) -> None:
    """Switch a SQLite file to WAL mode (persistent in the file), once it is known to be pebench's."""
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA journal_mode=WAL")


def shipped(path: Path) -> bool:
    """Whether ``path`` is a file shipped inside the package (:data:`PACKAGE_DATA`)."""
    return path.resolve().parent == PACKAGE_DATA


def in_wal_mode(path: Path) -> bool:
    """Whether the SQLite file ``path`` is in WAL mode, by its header (the read and write versions, bytes 18 and 19,
    are 2); a file too short to have a header (a new, empty database) is not."""
    try:
        with path.open("rb") as f:
            header = f.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18:20] == b"\x02\x02"


def readonly_url(url: URL, path: Path) -> URL:
    """The URL that opens the SQLite file ``path`` (of ``url``) for reading only, leaving no file beside it: the
    SQLite URI ``file:...?mode=ro``, with ``immutable=1`` for a file shipped in the package (never changed under a
    reader: no locks, nothing beside it, also in a read-only directory). A file in WAL mode keeps ``url``: a
    ``mode=ro`` connection would leave ``-wal``/``-shm`` files beside it, where a read-write one lets SQLite remove
    them at its close (its engine still refuses every write, :func:`open_readonly`). A URL that is a SQLite URI
    already (``?uri=true``) is the caller's own and kept too."""
    if "uri" in url.query or (in_wal_mode(path) and not shipped(path)):
        return url
    query = {"mode": "ro", "uri": "true", **({"immutable": "1"} if shipped(path) else {})}
    return URL.create("sqlite", database=path.resolve().as_uri(), query=query)


def safe_url(text: str) -> str:
    """``text`` -- a database URL, a ``PART::RUN`` spec, a command line or a message naming URLs -- with every
    password hidden: ``postgresql://user:***@host/db`` (what SQLAlchemy would send as the password: from the first
    ``:`` after ``scheme://`` to the next ``@``) and ``password=***`` (a query parameter, a libpq DSN). The one
    function for everything pebench prints, raises, logs or stores; the rest of ``text`` is left as it was."""
    return _PASSWORD_PARAM.sub(r"\1***", _CREDENTIALS.sub(r"\1:***@", text))


_CREDENTIALS = re.compile(r"(\b[A-Za-z][\w+.-]*://[^:/\s]*):[^@\s]*@")
_PASSWORD_PARAM = re.compile(r"(\bpassword=)[^&\s'\"]+", re.IGNORECASE)


def error_line(err: BaseException) -> str:
    """The first line of a database error (the driver's own message where SQLAlchemy wraps one), password masked."""
    lines = str(getattr(err, "orig", None) or err).strip().splitlines()
    return safe_url(lines[0]) if lines else type(err).__name__


CREATE_TRIES = 5


TRANSIENT = ("already exists", "duplicate", "database is locked")
"""What a process that opens a new database at the same moment as another may meet; it then tries again."""


def _with_retries(action: Callable[[], None]) -> None:
    """Run ``action`` (open, check, create the tables), again after a short wait when another process opening the
    same new database at the same moment got in the way: it created the tables first, or held the file's lock while
    switching it to WAL mode."""
    for attempt in range(CREATE_TRIES):
        try:
            action()
            return
        except sa_exc.SQLAlchemyError as err:
            text = str(getattr(err, "orig", err)).lower()
            if attempt + 1 == CREATE_TRIES or not any(t in text for t in TRANSIENT):
                raise
            time.sleep(0.1 * (attempt + 1))


def _quick_check(engine: Engine) -> None:
    """SQLite's own integrity check of the file's pages (``PRAGMA quick_check``): a corrupt file is refused."""
    with engine.connect() as conn:
        rows = [r[0] for r in conn.exec_driver_sql("PRAGMA quick_check").fetchall()]
    if rows != ["ok"]:
        raise sa_exc.DatabaseError("PRAGMA quick_check", None, Exception(f"corrupt file: {'; '.join(rows[:3])}"))


def open_db(url: str, create: bool = True, check: bool = True) -> Engine:
    """Open (and by default create) the results database at ``url``; bad URLs raise :class:`DatabaseError`.

    The check connects and reads the schema, so an unreachable path or a file that is not a database fails here,
    before any training starts; a SQLite file must also pass ``PRAGMA quick_check`` (corrupt pages are refused, never
    written to). The schema is checked by :func:`pebench.store.migrate.prepare`: its revision, and at the head
    revision every table and column the code needs; a writer (``create``) creates a new database and upgrades an older
    pebench one; a foreign, newer or incomplete database is refused, and read commands (``create=False``) never write;
    ``check=False`` (``pebench db``) leaves the schema to the caller. Messages show the URL without its password. The
    caller disposes of the engine; on any failure here it is already disposed.
    """
    return _open(url, create, check, dry_run=False)[0]


def open_readonly(url: str, check: bool = True) -> Engine:
    """Open the existing database at ``url`` for reading only: every command that only reads (``pebench results``,
    ``report``, ``findings``, ``compare``, the reference of ``--with-reference`` ...). The checks of
    :func:`open_db` with ``create=False`` (a missing file, ``PRAGMA quick_check``, the schema), but nothing can be
    written: a SQLite file is opened ``mode=ro`` (``immutable`` when shipped in the package, :func:`readonly_url`)
    and every connection refuses writes (``PRAGMA query_only``; on PostgreSQL read-only transactions), so nothing is
    created, migrated or switched to WAL mode, and no file is left beside it. The caller disposes of the engine."""
    return _open(url, create=False, check=check, dry_run=False, readonly=True)[0]


def check_db(url: str) -> migrate.SchemaState:
    """A writer's :func:`open_db` as a dry run (``pytest suite --collect-only``): the same checks and refusals, but
    nothing is created, upgraded or switched to WAL mode -- a SQLite file that does not exist yet is not created (its
    directory must exist). Returns what the database holds (``empty`` for a file not there yet)."""
    engine, state = _open(url, create=True, check=True, dry_run=True)
    engine.dispose()
    return state


def _open(url: str, create: bool, check: bool, dry_run: bool, readonly: bool = False
          ) -> tuple[Engine, migrate.SchemaState]:  # fmt: skip
    shown = safe_url(url)
    try:
        parsed = make_url(url)
    except sa_exc.ArgumentError:
        raise DatabaseError(f"--db {shown!r} is not a database URL; expected e.g. sqlite:///results.db") from None
    is_sqlite = parsed.get_backend_name() == "sqlite"
    is_file = is_sqlite and parsed.database not in (None, "", ":memory:")
    path = Path(parsed.database).expanduser() if is_file else None
    if path is not None:
        parent = path.resolve().parent
        if not parent.is_dir():
            raise DatabaseError(f"--db {shown!r}: directory {parent} does not exist")
        if not create and not path.exists():
            raise DatabaseError(f"--db {shown!r}: no such database file")
    try:
        engine = create_engine(readonly_url(parsed, path) if readonly and path is not None else parsed)
    except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ImportError) as err:
        raise DatabaseError(f"--db {shown!r} cannot be opened: {safe_url(str(err))}") from None
    if is_sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    if readonly and (is_sqlite or parsed.get_backend_name() == "postgresql"):
        event.listen(engine, "connect", _sqlite_query_only if is_sqlite else _postgres_read_only)
    state = migrate.SchemaState("empty", None, ())

    def prepare() -> None:
        nonlocal state
        exists = path is not None and path.exists()
        if exists:
            _quick_check(engine)
        if dry_run and path is not None and not exists:
            return  # connecting would create the file
        if not check:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            return
        state = migrate.prepare(engine, shown, create, dry_run)
        if path is not None and create and not dry_run and not shipped(path):
            _wal(engine)

    try:
        _with_retries(prepare)
    except DatabaseError:
        engine.dispose()
        raise
    except sa_exc.SQLAlchemyError as err:
        engine.dispose()
        raise DatabaseError(f"--db {shown!r} is not a usable database: {error_line(err)}{_why(path, readonly)}"
                            ) from None  # fmt: skip
    except BaseException:
        engine.dispose()
        raise
    return engine, state


def _why(path: Path | None, readonly: bool) -> str:
    """What a read of a SQLite file in WAL mode that SQLite refused lacks, when its directory does not take the
    ``-shm`` file WAL mode needs; else nothing."""
    if not readonly or path is None or not in_wal_mode(path) or os.access(path.resolve().parent, os.W_OK):
        return ""
    return (
        f" (it is in WAL mode, which needs a -shm file beside it, and this process cannot write in "
        f"{path.resolve().parent}: read a copy, or switch it to rollback-journal mode with sqlite3 FILE "
        "'PRAGMA journal_mode=DELETE')"
    )


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session whose work is committed at the end of the block, or rolled back entirely on error."""
    with Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


def start_run(engine: Engine, info: Mapping[str, Any]) -> int:
    """Insert a run row (status "running", this process's pid, a first heartbeat) and return its id."""
    with session_scope(engine) as s:
        run = Run(**{"pid": os.getpid(), "heartbeat_at": utcnow(), **dict(info)})
        s.add(run)
        s.flush()
        return run.id


def finish_run(engine: Engine, run_id: int, status: str) -> None:
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is not None:
            run.status = status
            run.finished_at = utcnow()


def add_result(engine: Engine, run_id: int, record: ResultRecord | Mapping[str, Any]) -> int:
    """Store one case's result and its learning curve atomically; returns the result id. A mapping must hold only
    :class:`ResultRecord`'s fields (an unknown key is an error, never silently dropped)."""
    record = ResultRecord.coerce(record)
    # NaN in a float column is stored as NULL (no score), as SQLite does on its own, on every backend alike
    columns = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in record.columns().items()}
    with session_scope(engine) as s:
        result = Result(run_id=run_id, **columns)
        result.curve = [CurvePoint(**curve_row(p)) for p in record.curve]
        store_fingerprints(s, record.fingerprints)
        s.add(result)
        s.flush()
        return result.id
