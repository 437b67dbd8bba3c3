"""The results database: one module owns the schema (SQLAlchemy 2 ORM).

Tables:

* ``runs`` -- one per ``pytest suite`` session: times, status, provenance (git commit and dirty flag, package, torch
  and Python versions, device, host) and the command-line options;
* ``results`` -- one per case (run, encoding, task, train length, eval length, seed) with the config JSON and its
  hash, versions, status (ok / diverged / error) and message, and the metrics;
* ``curve_points`` -- the learning curve of the model a result was evaluated with.

Writes happen in one transaction per result, so a crash never leaves a half-written result. SQLite databases run
in WAL mode with a busy timeout, so several processes may write to one file. Under pytest-xdist only the controller
process writes (workers hand results over in the test report), see :mod:`pebench.pytest_plugin`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
    select,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from pebench.errors import DatabaseError

SCHEMA_VERSION = 1


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="running")  # running | finished | failed | interrupted
    git_commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    git_dirty: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    package_version: Mapped[str] = mapped_column(String(32))
    torch_version: Mapped[str] = mapped_column(String(64))
    python_version: Mapped[str] = mapped_column(String(32))
    device: Mapped[str] = mapped_column(String(128))
    host: Mapped[str] = mapped_column(String(255))
    platform: Mapped[str] = mapped_column(String(255), default="")
    tier: Mapped[str] = mapped_column(String(16), default="quick")
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    command: Mapped[str] = mapped_column(Text, default="")
    schema_version: Mapped[int] = mapped_column(Integer, default=SCHEMA_VERSION)

    results: Mapped[list[Result]] = relationship(back_populates="run", cascade="all, delete-orphan")


class Result(Base):
    __tablename__ = "results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    case_id: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    encoding: Mapped[str] = mapped_column(String(64), index=True)
    encoding_version: Mapped[str] = mapped_column(String(16))
    task: Mapped[str] = mapped_column(String(64), index=True)
    task_version: Mapped[str] = mapped_column(String(16))
    train_length: Mapped[int] = mapped_column(Integer)
    eval_length: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    config_hash: Mapped[str] = mapped_column(String(32), index=True)
    code_version: Mapped[str] = mapped_column(String(64), default="")
    status: Mapped[str] = mapped_column(String(16))  # ok | diverged | error
    message: Mapped[str] = mapped_column(Text, default="")
    metric: Mapped[str] = mapped_column(String(32), default="accuracy")
    higher_is_better: Mapped[bool] = mapped_column(Boolean, default=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    loss: Mapped[float | None] = mapped_column(Float, nullable=True)
    token_accuracy: Mapped[float | None] = mapped_column(Float, nullable=True)
    sequence_accuracy: Mapped[float | None] = mapped_column(Float, nullable=True)
    chance_level: Mapped[float | None] = mapped_column(Float, nullable=True)
    train_steps: Mapped[int | None] = mapped_column(Integer, nullable=True)
    train_time_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    tokens_per_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    final_train_loss: Mapped[float | None] = mapped_column(Float, nullable=True)
    eval_time_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    model_reused: Mapped[bool] = mapped_column(Boolean, default=False)
    reused_from: Mapped[int | None] = mapped_column(Integer, nullable=True)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    run: Mapped[Run] = relationship(back_populates="results")
    curve: Mapped[list[CurvePoint]] = relationship(
        back_populates="result", cascade="all, delete-orphan", order_by="CurvePoint.step"
    )


class CurvePoint(Base):
    __tablename__ = "curve_points"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id"), index=True)
    step: Mapped[int] = mapped_column(Integer)
    loss: Mapped[float | None] = mapped_column(Float, nullable=True)
    accuracy: Mapped[float | None] = mapped_column(Float, nullable=True)

    result: Mapped[Result] = relationship(back_populates="curve")


RESULT_FIELDS = tuple(c.name for c in Result.__table__.columns if c.name not in ("id", "run_id", "created_at"))


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def open_db(url: str, create: bool = True) -> Engine:
    """Open (and by default create) the results database at ``url``; bad URLs raise :class:`DatabaseError`.

    The check connects and reads the schema, so an unreachable path or a file that is not a database fails here,
    before any training starts.
    """
    try:
        parsed = make_url(url)
    except sa_exc.ArgumentError:
        raise DatabaseError(f"--db {url!r} is not a database URL; expected e.g. sqlite:///results.db") from None
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and parsed.database not in (None, "", ":memory:"):
        parent = Path(parsed.database).expanduser().resolve().parent
        if not parent.is_dir():
            raise DatabaseError(f"--db {url!r}: directory {parent} does not exist")
        if not create and not Path(parsed.database).expanduser().exists():
            raise DatabaseError(f"--db {url!r}: no such database file")
    try:
        engine = create_engine(parsed)
    except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ImportError) as err:
        raise DatabaseError(f"--db {url!r} cannot be opened: {err}") from None
    if is_sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    try:
        if create:
            Base.metadata.create_all(engine)
        else:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
    except sa_exc.SQLAlchemyError as err:
        engine.dispose()
        reason = str(getattr(err, "orig", err)).splitlines()[0]
        raise DatabaseError(f"--db {url!r} is not a usable database: {reason}") from None
    return engine


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session whose work is committed at the end of the block, or rolled back entirely on error."""
    with Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


def start_run(engine: Engine, info: Mapping[str, Any]) -> int:
    """Insert a run row (status "running") and return its id."""
    with session_scope(engine) as s:
        run = Run(**dict(info))
        s.add(run)
        s.flush()
        return run.id


def finish_run(engine: Engine, run_id: int, status: str) -> None:
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is not None:
            run.status = status
            run.finished_at = utcnow()


def add_result(engine: Engine, run_id: int, record: Mapping[str, Any]) -> int:
    """Store one case's result and its learning curve atomically; returns the result id."""
    fields = {k: record[k] for k in RESULT_FIELDS if k in record}
    curve = record.get("curve") or []
    with session_scope(engine) as s:
        result = Result(run_id=run_id, **fields)
        result.curve = [CurvePoint(step=p["step"], loss=p.get("loss"), accuracy=p.get("accuracy")) for p in curve]
        s.add(result)
        s.flush()
        return result.id


def resolve_run_id(engine: Engine, run: int | str) -> int:
    """A run id from an int, a numeric string, ``latest`` or ``previous``; unknown ones raise DatabaseError."""
    with Session(engine) as s:
        ids = list(s.scalars(select(Run.id).order_by(Run.id.desc())))
    if isinstance(run, str) and run in ("latest", "previous"):
        idx = 0 if run == "latest" else 1
        if len(ids) <= idx:
            raise DatabaseError(f"no {run} run: the database has {len(ids)} run(s)")
        return ids[idx]
    try:
        run_id = int(run)
    except (TypeError, ValueError):
        raise DatabaseError(f"run {run!r} is not a run id; valid: an integer, latest, previous") from None
    if run_id not in ids:
        shown = ", ".join(str(i) for i in sorted(ids)[-10:]) or "none"
        raise DatabaseError(f"unknown run id {run_id}; existing runs: {shown}")
    return run_id
