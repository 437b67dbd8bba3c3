"""The results database's schema (SQLAlchemy 2 ORM): the one place that defines the tables.

Tables:

* ``runs`` -- one per ``pytest suite`` session: times, status, provenance (git commit and dirty flag, package, torch
  and Python versions, device, host) and the command-line options;
* ``results`` -- one per case (run, encoding, task, train length, eval length, seed) with the config JSON and its
  hash, versions, status (ok / diverged / error) and message, and the metrics;
* ``fingerprints`` -- the behavioural fingerprints results point to (``results.encoding_fingerprint`` and
  ``results.task_fingerprint``, :mod:`pebench.engine.fingerprint`): an encoding's probe values or a task's data
  digest, with the name and options they were computed for and the machine, keyed by their digest;
* ``curve_points`` -- the learning curve of the model a result was evaluated with: training loss and accuracy, and
  the validation values ``val_1x`` and ``val_2x`` (the result's ``metric`` on held-out batches at the training length
  and at twice it; NULL where not measured).

:class:`pebench.records.record.ResultRecord` is the typed form of one ``results`` row plus its curve.

The database carries its Alembic revision (table ``alembic_version``); a change to these tables comes with a
migration in ``pebench/store/migrations/versions`` and a new :data:`HEAD_REVISION` (see
:mod:`pebench.store.migrate`). JSON columns are ``jsonb`` on PostgreSQL and store non-finite floats (a diverged
evaluation's loss) as ``{"$float": "Infinity"}``, which every backend accepts, and read them back as floats.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator, TypeEngine

from pebench.records.record import COLUMNS as RECORD_COLUMNS
from pebench.status import RunStatus

HEAD_REVISION = "0007"
"""The Alembic revision of the tables below (``pebench/store/migrations/versions``)."""
SCHEMA_VERSION = int(HEAD_REVISION)
"""Stored with each run (``runs.schema_version``): the schema revision the run was written with."""

FLOAT_TAG = "$float"
_NONFINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def encode_nonfinite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``{"$float": "Infinity" | "-Infinity" | "NaN"}``: standard
    JSON has no such numbers, and PostgreSQL rejects the ``Infinity`` token Python's json module writes."""
    if isinstance(value, float) and not math.isfinite(value):
        return {FLOAT_TAG: "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if isinstance(value, dict):
        return {k: encode_nonfinite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_nonfinite(v) for v in value]
    return value


def decode_nonfinite(value: Any) -> Any:
    """The inverse of :func:`encode_nonfinite`."""
    if isinstance(value, dict):
        if len(value) == 1 and value.get(FLOAT_TAG) in _NONFINITE:
            return _NONFINITE[value[FLOAT_TAG]]
        return {k: decode_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_nonfinite(v) for v in value]
    return value


class JSONValue(TypeDecorator[Any]):
    """JSON that is ``jsonb`` on PostgreSQL and keeps non-finite floats (:func:`encode_nonfinite`)."""

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        return dialect.type_descriptor(JSONB() if dialect.name == "postgresql" else JSON())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return encode_nonfinite(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return decode_nonfinite(value)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default=RunStatus.RUNNING)
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)  # of the writing process, on ``host``
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)  # renewed while it runs
    git_commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    git_dirty: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    package_version: Mapped[str] = mapped_column(String(32))
    torch_version: Mapped[str] = mapped_column(String(64))
    python_version: Mapped[str] = mapped_column(String(32))
    device: Mapped[str] = mapped_column(String(128))
    host: Mapped[str] = mapped_column(String(255))
    platform: Mapped[str] = mapped_column(String(255), default="")
    tier: Mapped[str] = mapped_column(String(16), default="quick")
    options: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    command: Mapped[str] = mapped_column(Text, default="")
    schema_version: Mapped[int] = mapped_column(Integer, default=SCHEMA_VERSION)

    results: Mapped[list[Result]] = relationship(back_populates="run", cascade="all, delete-orphan")


class Result(Base):
    __tablename__ = "results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    case_id: Mapped[str] = mapped_column(String(255))
    point: Mapped[str] = mapped_column(String(255), default="")  # the sweep point (pebench.case.Case.point); "": none
    # the point as its axes, [[name, value], ...] in the sweep's order (pebench.case.Point.stored); []: none
    axes: Mapped[list[list[str]]] = mapped_column(JSONValue, default=list, server_default="[]")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    encoding: Mapped[str] = mapped_column(String(64), index=True)
    encoding_version: Mapped[str] = mapped_column(String(16))
    task: Mapped[str] = mapped_column(String(64), index=True)
    task_version: Mapped[str] = mapped_column(String(16))
    train_length: Mapped[int] = mapped_column(Integer)
    eval_length: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    config: Mapped[dict[str, Any]] = mapped_column(JSONValue)
    config_hash: Mapped[str] = mapped_column(String(32), index=True)
    code_version: Mapped[str] = mapped_column(String(64), default="")
    encoding_fingerprint: Mapped[str] = mapped_column(String(64), default="")  # a fingerprints.digest; "": none
    task_fingerprint: Mapped[str] = mapped_column(String(64), default="")  # a fingerprints.digest; "": none
    status: Mapped[str] = mapped_column(String(16))  # a ResultStatus
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
    metrics: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)

    run: Mapped[Run] = relationship(back_populates="results")
    curve: Mapped[list[CurvePoint]] = relationship(
        back_populates="result", cascade="all, delete-orphan", order_by="CurvePoint.step"
    )


class Fingerprint(Base):
    """One behavioural fingerprint (:mod:`pebench.engine.fingerprint`): ``kind`` "encoding" (``values``: the probe,
    name -> list of floats) or "task" (``values``: empty; the digest is the data hash itself)."""

    __tablename__ = "fingerprints"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(64))
    options: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    values: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    machine: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class CurvePoint(Base):
    __tablename__ = "curve_points"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id"), index=True)
    step: Mapped[int] = mapped_column(Integer)
    loss: Mapped[float | None] = mapped_column(Float, nullable=True)
    accuracy: Mapped[float | None] = mapped_column(Float, nullable=True)
    val_1x: Mapped[float | None] = mapped_column(Float, nullable=True)
    val_2x: Mapped[float | None] = mapped_column(Float, nullable=True)

    result: Mapped[Result] = relationship(back_populates="curve")


RESULT_FIELDS = tuple(c.name for c in Result.__table__.columns if c.name not in ("id", "run_id", "created_at"))
if set(RESULT_FIELDS) != set(RECORD_COLUMNS):  # the record and the schema must not drift apart
    raise ImportError(f"ResultRecord and the results table differ: {sorted(set(RECORD_COLUMNS) ^ set(RESULT_FIELDS))}")
