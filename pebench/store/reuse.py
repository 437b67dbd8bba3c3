"""Result reuse (``pytest suite --reuse``): copy an earlier result instead of training again.

A result is reusable for a new case when an earlier ``ok`` result has the same encoding, task, seed, train and
evaluation length, configuration hash (which covers every setting but the seed and length), encoding and task
versions, was computed on the same device type (cpu / cuda / mps: their numbers differ), and by code that computes
the same: its task's data digest equal and its encoding's probe within the tolerance
(:mod:`pebench.engine.fingerprint`); a result stored without fingerprints needs the same source hash
(``code_version``, :func:`pebench.engine.code.code_version`) instead. The newest such result is copied into
the current run as a new row with ``model_reused`` set and ``reused_from`` = the id of the result that was actually
computed (a copy of a copy points at the original).

The lookup only reads the database, so it runs in xdist workers too; the copied record travels to the controller
like any other record, and only the controller writes.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from pebench.engine.fingerprint import same_probe
from pebench.records.record import ResultRecord, curve_point
from pebench.status import ResultStatus
from pebench.store.database import open_readonly
from pebench.store.schema import RESULT_FIELDS, Fingerprint, Result, Run

MATCH_FIELDS = (
    "encoding",
    "task",
    "seed",
    "train_length",
    "eval_length",
    "config_hash",
    "encoding_version",
    "task_version",
)


class ReuseLookup:
    """Callable for :class:`pebench.engine.runner.Runner`'s ``reuse`` hook: ``lookup(record)`` -> copied record or
    None."""

    def __init__(self, url: str, device_type: str) -> None:
        self.url = url
        self.device_type = device_type
        self._engine: Engine | None = None
        self.hits = 0

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = open_readonly(self.url)
        return self._engine

    def find(self, record: ResultRecord) -> Result | None:
        """The newest earlier ``ok`` result matching ``record``'s identity (see the module docstring)."""
        query = (
            select(Result)
            .join(Run, Result.run_id == Run.id)
            .where(Result.status == ResultStatus.OK, Run.device.like(f"{self.device_type}%"))
            .order_by(Result.id.desc())
            .limit(50)
        )
        for name in MATCH_FIELDS:
            query = query.where(getattr(Result, name) == getattr(record, name))
        with Session(self.engine) as s:
            for found in s.scalars(query):
                if computes_same(s, found, record):
                    _ = list(found.curve)  # load before the session closes
                    s.expunge_all()
                    return found
        return None

    def __call__(self, record: ResultRecord) -> ResultRecord | None:
        old = self.find(record)
        if old is None:
            return None
        self.hits += 1
        copied = {name: getattr(old, name) for name in RESULT_FIELDS}
        origin = old.reused_from or old.id
        copied.update(
            case_id=record.case_id,
            point=record.point,
            axes=record.axes,
            model_reused=True,
            reused_from=origin,
            message=f"reused result {origin}",
            curve=[curve_point(p, old.metric) for p in old.curve],
        )
        return ResultRecord(**copied)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def computes_same(session: Session, found: Result, record: ResultRecord) -> bool:
    """Whether the stored result ``found`` was computed by code that computes what ``record``'s does: the same task
    data digest and an encoding probe within the tolerance; by the source hash when ``found`` has no fingerprints."""
    if not (found.encoding_fingerprint and found.task_fingerprint and record.encoding_fingerprint):
        return found.code_version == record.code_version
    if found.task_fingerprint != record.task_fingerprint:
        return False
    if found.encoding_fingerprint == record.encoding_fingerprint:
        return True
    stored = session.get(Fingerprint, found.encoding_fingerprint)
    mine = next((f["values"] for f in record.fingerprints if f.get("digest") == record.encoding_fingerprint), None)
    return stored is not None and mine is not None and same_probe(stored.values, mine)
