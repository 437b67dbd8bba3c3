"""The typed result record: what a case produces and the database stores, one ``results`` row plus its curve.

The runner builds it, it travels from an xdist worker to the writing process as JSON (:meth:`ResultRecord.to_json`),
reuse copies it, and :func:`pebench.store.database.add_result` writes exactly its fields. Its fields but
:data:`NOT_COLUMNS` (:data:`COLUMNS`) are the columns of :class:`pebench.store.schema.Result`, checked when the schema
is imported, so a field can be neither forgotten nor silently dropped. This module sits below the engine and the
store (it imports neither), so the engine builds records without importing the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from pebench.case import Point
from pebench.status import ResultStatus


@dataclass
class ResultRecord:
    """One case's result. ``metrics`` holds ``splits`` (per evaluation split: loss, accuracies, perplexity), and for
    the training-length case the ``attention`` snapshot (:mod:`pebench.records.attention`); ``curve`` is the learning
    curve of the model, a list of ``{"step", "loss", "accuracy"}`` with, where measured, the validation values
    ``val_<metric>_1x`` and ``val_<metric>_2x`` (:class:`pebench.engine.evaluation.Validation`; stored as ``val_1x`` and
    ``val_2x``, see :func:`curve_row` and :func:`curve_point`)."""

    case_id: str
    encoding: str
    encoding_version: str
    task: str
    task_version: str
    train_length: int
    eval_length: int
    seed: int
    config: dict[str, Any]
    config_hash: str
    status: str = ResultStatus.OK
    message: str = ""
    code_version: str = ""
    encoding_fingerprint: str = ""
    task_fingerprint: str = ""
    metric: str = "accuracy"
    higher_is_better: bool = True
    chance_level: float | None = None
    score: float | None = None
    loss: float | None = None
    token_accuracy: float | None = None
    sequence_accuracy: float | None = None
    train_steps: int | None = None
    train_time_s: float | None = None
    tokens_per_s: float | None = None
    final_train_loss: float | None = None
    eval_time_s: float | None = None
    model_reused: bool = False
    reused_from: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    point: str = ""
    """The sweep point's text (:attr:`pebench.case.Case.point`, its own column, the id part): "" at none; always
    ``str(Point.of_stored(axes))`` (a record given ``axes`` alone takes it from them)."""
    axes: list[list[str]] = field(default_factory=list)
    """The sweep point as its axes (:meth:`pebench.case.Point.stored`, ``results.axes``): ``[["layers", "4"], ["lr",
    "0.01"]]`` in the sweep's order, ``[]`` at none; what readers take a point's values from."""
    curve: list[dict[str, Any]] = field(default_factory=list)
    fingerprints: list[dict[str, Any]] = field(default_factory=list)
    """The ``fingerprints`` rows ``encoding_fingerprint`` and ``task_fingerprint`` name (digest, kind, name, options,
    values, machine), stored with the result unless the database has them already; not a column."""

    def __post_init__(self) -> None:
        point = Point.of_stored(self.axes)
        if self.point and self.point != str(point):  # a point's text does not split back into axes: give them
            raise ValueError(f"result record {self.case_id}: point {self.point!r} is not that of its axes "
                             f"{self.axes!r} (give the axes, pebench.case.Point.stored)")  # fmt: skip
        self.point, self.axes = str(point), point.stored()

    @classmethod
    def coerce(cls, record: ResultRecord | Mapping[str, Any]) -> ResultRecord:
        """``record`` itself, or a record made from a mapping of its fields (an unknown key is an error)."""
        if isinstance(record, ResultRecord):
            return record
        unknown = sorted(set(record) - FIELDS)
        if unknown:
            valid = ", ".join(sorted(FIELDS))
            raise ValueError(f"result record: unknown field(s) {', '.join(unknown)}; valid: {valid}")
        return cls(**record)

    def columns(self) -> dict[str, Any]:
        """The values of the ``results`` row (every field but ``curve`` and ``fingerprints``)."""
        return {name: getattr(self, name) for name in COLUMNS}

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ResultRecord:
        return cls.coerce(json.loads(text))


def curve_row(point: Mapping[str, Any]) -> dict[str, Any]:
    """The ``curve_points`` columns of a curve point: ``val_<metric>_<n>x`` becomes ``val_<n>x``."""
    row = {"step": point["step"], "loss": point.get("loss"), "accuracy": point.get("accuracy"), "val_1x": None,
           "val_2x": None}  # fmt: skip
    for key, value in point.items():
        for factor in ("1x", "2x"):
            if key.startswith("val_") and key.endswith(f"_{factor}"):
                row[f"val_{factor}"] = value
    return row


def curve_point(row: Any, metric: str) -> dict[str, Any]:
    """A curve point from a ``curve_points`` row (``metric``: its result's), the inverse of :func:`curve_row`."""
    point = {"step": row.step, "loss": row.loss, "accuracy": row.accuracy}
    for factor in ("1x", "2x"):
        value = getattr(row, f"val_{factor}", None)
        if value is not None:
            point[f"val_{metric}_{factor}"] = value
    return point


FIELDS = frozenset(f.name for f in fields(ResultRecord))
NOT_COLUMNS = frozenset({"curve", "fingerprints"})
"""The fields that are not columns of ``results``."""
COLUMNS = tuple(f.name for f in fields(ResultRecord) if f.name not in NOT_COLUMNS)
"""The ``results`` columns a record holds, in field order (:mod:`pebench.store.schema` checks them on import)."""
