"""Schema revisions of the results database (Alembic), and what pebench does with a database it opens.

Every database pebench writes carries its Alembic revision (table ``alembic_version``). On open
(:func:`pebench.store.database.open_db`) the database is classified (:func:`inspect_schema`):

* ``current`` -- at :data:`~pebench.store.schema.HEAD_REVISION`: used as it is;
* ``empty`` -- no table at all: a writer creates the tables and stamps the head revision; a read command refuses;
* ``behind`` -- a pebench database of an older revision, or one written before pebench carried revisions (its
  revision is then recognised from its columns): a writer (the suite, ``pebench merge``) upgrades it in place when
  every pending step is marked ``SAFE`` (it only adds), and says so; read commands never write, so they stop with one
  line naming ``pebench db upgrade``;
* ``ahead`` -- written by a newer pebench (a revision this one does not know): refused;
* ``incomplete`` -- a pebench database (its ``alembic_version`` names a revision this pebench knows) whose tables or
  columns are not all there, compared with what :mod:`~pebench.store.schema` declares (SQLAlchemy's inspector):
  hand-edited, or written by another tool. Refused in one line naming the missing pieces, by readers and writers
  alike, so no case trains only to find its row cannot be written; an upgrade that would leave a database so is
  rolled back;
* ``foreign`` -- tables that are not pebench's (another program's database): refused, and never written to.

Creation and upgrades run in one transaction under a lock (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction
advisory lock), and the state is read again inside it, so two processes opening one new database at the same moment
neither fail nor both create the tables.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from pebench.errors import DatabaseError
from pebench.store.schema import HEAD_REVISION, Base

if TYPE_CHECKING:  # Alembic is imported where a schema is created, stamped or upgraded; a current one needs none
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "alembic_version"
PEBENCH_TABLES = frozenset(Base.metadata.tables)
TABLES_SINCE = {"fingerprints": "0005"}
"""Tables added after the first revision, with the revision that added them: an older database lacks them rightly."""
RESULT_COLUMNS_SINCE = {"encoding_fingerprint": "0005", "task_fingerprint": "0005", "point": "0006", "axes": "0007"}
"""``results`` columns added after the legacy revisions (a legacy database lacks them rightly)."""
FIRST_TABLES = PEBENCH_TABLES - set(TABLES_SINCE)
LEGACY_REVISIONS = {"0001": set(), "0002": {"code_version", "reused_from"}}
"""Revisions a database without ``alembic_version`` can be at, told apart by these ``results`` columns."""
ADVISORY_LOCK = 0x7065_6265_6E63  # "pebenc": one lock id for every pebench database on a PostgreSQL server


@dataclass(frozen=True)
class SchemaState:
    """What a database holds, as far as pebench is concerned."""

    kind: str  # current | empty | behind | ahead | incomplete | foreign
    revision: str | None
    tables: tuple[str, ...]
    missing: tuple[str, ...] = ()
    """For ``incomplete``: what the code needs and the database lacks (``table NAME``, ``TABLE.COLUMN``)."""

    def describe(self) -> str:
        """The state in words, one line (``pebench db status`` prints it; refusals quote it)."""
        if self.kind == "incomplete":
            lacks = f"whose tables lack {', '.join(self.missing)}" if self.missing else ""
            if self.revision is None:
                return "a pebench database whose alembic_version table holds no revision" + (f" and {lacks}"
                                                                                              if lacks else "")
            return f"a pebench database at schema revision {self.revision} {lacks}"
        if self.kind == "foreign":
            shown = ", ".join(self.tables[:5]) + (", ..." if len(self.tables) > 5 else "")
            return f"not a pebench results database (it has tables {shown})"
        if self.kind == "empty":
            return "an empty database (no pebench results yet)"
        return f"a pebench database at schema revision {self.revision or 'none'} (this pebench: {HEAD_REVISION})"


def script() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS))


def _known_revisions() -> list[str]:
    return [s.revision for s in script().walk_revisions()]


def _stored_revision(conn: Connection) -> str | None:
    """The revision in ``alembic_version``, read as Alembic's ``MigrationContext.get_current_revision`` reads it (none:
    None), without importing Alembic; a table holding several (branches, which pebench never makes) is left to
    Alembic and its own error."""
    rows = [r[0] for r in conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}")]
    if len(rows) > 1:
        from alembic.runtime.migration import MigrationContext

        return MigrationContext.configure(conn).get_current_revision()
    return rows[0] if rows else None


def _columns(conn: Connection, table: str) -> set[str]:
    return {c["name"] for c in inspect(conn).get_columns(table)}


def _legacy_revision(conn: Connection, tables: set[str]) -> str | None:
    """The revision of a database written before pebench carried revisions, from its columns; None when the tables
    are not pebench's."""
    if not tables >= FIRST_TABLES:
        return None
    first = ({c.name for c in Base.metadata.tables["results"].columns} - set().union(*LEGACY_REVISIONS.values())
             - set(RESULT_COLUMNS_SINCE))
    results = _columns(conn, "results")
    if not first <= results or not {"id", "status", "host", "started_at"} <= _columns(conn, "runs"):
        return None
    found = [rev for rev, extra in LEGACY_REVISIONS.items() if extra <= results]
    return found[-1]


def missing_pieces(conn: Connection, tables: set[str], columns: bool = True, revision: str | None = None
                   ) -> tuple[str, ...]:  # fmt: skip
    """What :mod:`~pebench.store.schema` declares and the database behind ``conn`` (holding ``tables``, at
    ``revision``: tables added later are not asked for) lacks: ``table NAME`` for a table, ``TABLE.COLUMN`` for a
    column of a table it has (``columns=False``: tables only)."""
    have: dict[str, set[str]] = {}
    if columns:  # one catalogue query for all tables where the backend can
        found = inspect(conn).get_multi_columns(filter_names=[t for t in Base.metadata.tables if t in tables])
        have = {name: {c["name"] for c in cols} for (_, name), cols in found.items()}
    out: list[str] = []
    for name, table in Base.metadata.tables.items():
        if name not in tables and (revision is None or TABLES_SINCE.get(name, "0000") <= revision):
            out.append(f"table {name}")
        elif columns:
            out += [f"{name}.{c.name}" for c in table.columns if c.name not in have.get(name, set())]
    return tuple(out)


def inspect_schema(conn: Connection) -> SchemaState:
    """Classify the database behind ``conn`` (reads only). At the head revision every declared table and column must
    be there; an older revision is checked for its tables here and for its columns once upgraded (:func:`prepare`)."""
    tables = set(inspect(conn).get_table_names())
    shown = tuple(sorted(tables))
    if not tables:
        return SchemaState("empty", None, shown)
    if VERSION_TABLE in tables:
        revision = _stored_revision(conn)
        known = revision is None or revision == HEAD_REVISION or revision in _known_revisions()
        if not tables & PEBENCH_TABLES or not (known or tables >= FIRST_TABLES):
            return SchemaState("foreign", revision, shown)
        if not known:
            return SchemaState("ahead", revision, shown)
        missing = missing_pieces(conn, tables, columns=revision == HEAD_REVISION, revision=revision)
        if missing or revision is None:
            return SchemaState("incomplete", revision, shown, missing)
        return SchemaState("current" if revision == HEAD_REVISION else "behind", revision, shown)
    legacy = _legacy_revision(conn, tables)
    if legacy is None:
        return SchemaState("foreign", None, shown)
    return SchemaState("behind", legacy, shown)


def pending(revision: str | None) -> list[Any]:
    """The migration scripts from ``revision`` (exclusive) to the head, oldest first."""
    steps = list(script().iterate_revisions(HEAD_REVISION, revision))
    return list(reversed(steps))


def upgrade_is_safe(revision: str | None) -> bool:
    return all(getattr(s.module, "SAFE", False) for s in pending(revision))


def _alembic_config(conn: Connection) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    return cfg


def upgrade(conn: Connection, state: SchemaState) -> None:
    """Bring the database behind ``conn`` to the head revision: create it when empty, else stamp a database from
    before revisions with the revision its columns show and run the pending steps."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    if state.kind == "empty":
        Base.metadata.create_all(conn)
        MigrationContext.configure(conn).stamp(script(), HEAD_REVISION)
        return
    cfg = _alembic_config(conn)
    if VERSION_TABLE not in state.tables:
        command.stamp(cfg, state.revision)
    command.upgrade(cfg, HEAD_REVISION)


@contextmanager
def locked(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that holds the database's write lock until it commits (or rolls back)."""
    if engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        # pysqlite starts no transaction before DDL; a separate engine with explicit BEGIN IMMEDIATE makes creation
        # and migration one atomic, exclusive step
        locker = create_engine(engine.url, poolclass=NullPool)

        @event.listens_for(locker, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None
            dbapi_conn.execute("PRAGMA busy_timeout=30000")

        @event.listens_for(locker, "begin")
        def _begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        try:
            with locker.begin() as conn:
                yield conn
        finally:
            locker.dispose()
        return
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({ADVISORY_LOCK})")
        yield conn


def prepare(engine: Engine, shown: str, create: bool, dry_run: bool = False) -> SchemaState:
    """Check (and for a writer, ``create=True``, create or upgrade) the schema; refusals raise DatabaseError.
    ``dry_run``: a writer's checks and refusals, but nothing created or upgraded (``pytest suite --collect-only``)."""
    with engine.connect() as conn:
        state = inspect_schema(conn)
    if state.kind == "current":
        return state
    _refuse(state, shown, create)
    if dry_run:
        return state
    with locked(engine) as conn:
        state = inspect_schema(conn)  # another process may have created or upgraded it meanwhile
        if state.kind != "current":
            _refuse(state, shown, create)
            _upgrade_checked(conn, state, shown)
    if state.kind == "behind":
        print(f"pebench: upgraded {shown} from schema revision {state.revision} to {HEAD_REVISION}", file=sys.stderr)
    return state


def _upgrade_checked(conn: Connection, state: SchemaState, shown: str) -> None:
    """:func:`upgrade`, then the check of :func:`inspect_schema` on the result: a database the steps cannot bring to
    exactly the declared tables and columns (it lacked a column no step adds) is refused, and the whole upgrade rolled
    back with the transaction."""
    upgrade(conn, state)
    after = inspect_schema(conn)
    if after.kind != "current":  # named at the revision it stays at
        _refuse(SchemaState("incomplete", state.revision, after.tables, after.missing), shown, create=False)


def _refuse(state: SchemaState, shown: str, create: bool) -> None:
    """Raise unless a writer (``create``) may bring the database to the head on its own."""
    if state.kind == "incomplete":
        raise DatabaseError(f"--db {shown!r} is {state.describe()} (hand-edited, or written by another tool); "
                            f"pebench neither reads nor writes it: restore what it lacks or give a new file (pebench "
                            f"db status --db '{shown}' says what it holds)")  # fmt: skip
    if state.kind == "foreign":
        raise DatabaseError(f"--db {shown!r} is {state.describe()}; pebench never writes to it: give a new file or "
                            "an empty database")  # fmt: skip
    if state.kind == "ahead":
        raise DatabaseError(f"--db {shown!r} was written by a newer pebench (schema revision {state.revision}; this "
                            f"one knows up to {HEAD_REVISION}): upgrade pebench to read it")  # fmt: skip
    if not create and state.kind == "empty":
        raise DatabaseError(f"--db {shown!r} is {state.describe()}")
    if state.kind == "behind" and (not create or not upgrade_is_safe(state.revision)):
        raise DatabaseError(f"--db {shown!r} is {state.describe()}; upgrade it with: pebench db upgrade --db "
                            f"'{shown}' (a suite run upgrades it too)")  # fmt: skip


def upgrade_database(engine: Engine, shown: str) -> tuple[SchemaState, str]:
    """``pebench db upgrade``: bring the database to the head revision, whatever the steps; returns the state before
    and the revision after. Foreign, newer and incomplete databases are still refused."""
    with locked(engine) as conn:
        state = inspect_schema(conn)
        if state.kind in ("foreign", "ahead", "incomplete"):
            _refuse(state, shown, create=True)
        if state.kind != "current":
            _upgrade_checked(conn, state, shown)
    return state, HEAD_REVISION
