"""Reading results back: every query the analysis and the report make lives here.

:func:`load` returns a pandas DataFrame with one row per result joined with its run (``pebench.results.load``);
:func:`load_light`, :func:`attach_json`, :func:`runs` and :func:`curve_points` serve the report, which reads the
JSON columns only for the rows it shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from pebench.records.frame import MODEL_KEY, at_point, curve_owners, point_column, points  # noqa: F401 (moved)
from pebench.store.database import open_readonly
from pebench.store.lifecycle import effective_status, resolve_run_id, run_counts
from pebench.store.schema import CurvePoint, Result, Run

if TYPE_CHECKING:
    import pandas as pd

CHUNK = 500
"""Ids per ``IN (...)`` query."""


def load(db_url: str, run: int | str | None = None, encodings: Sequence[str] | None = None,
         tasks: Sequence[str] | None = None) -> pd.DataFrame:  # fmt: skip
    """Results of every run (or of ``run``: an id, ``latest`` or ``previous``) as a DataFrame; only those of
    ``encodings`` and ``tasks`` where given.

    Columns: every column of the ``results`` table, plus the run's provenance prefixed ``run_`` (``run_git_commit``,
    ``run_device``, ...; ``run_status`` as things stand, see :mod:`pebench.store.lifecycle`). ``config`` and
    ``metrics`` stay as dicts.
    """
    import pandas as pd

    engine = open_readonly(db_url)
    try:
        query = select(Result, Run).join(Run, Result.run_id == Run.id).order_by(Result.id)
        if run is not None:
            query = query.where(Result.run_id == resolve_run_id(engine, run))
        if encodings is not None:
            query = query.where(Result.encoding.in_(list(encodings)))
        if tasks is not None:
            query = query.where(Result.task.in_(list(tasks)))
        rows = []
        with Session(engine) as s:
            for result, run_row in s.execute(query):
                row = {c.name: getattr(result, c.name) for c in Result.__table__.columns}
                for c in Run.__table__.columns:
                    if c.name != "id":
                        row[f"run_{c.name}"] = getattr(run_row, c.name)
                row["run_status"] = effective_status(run_row)
                rows.append(row)
    finally:
        engine.dispose()
    columns = [c.name for c in Result.__table__.columns] + [
        f"run_{c.name}" for c in Run.__table__.columns if c.name != "id"
    ]
    return pd.DataFrame(rows, columns=columns)


LIGHT_COLUMNS = ("id", "run_id", "case_id", "point", "axes", "encoding", "task", "train_length", "eval_length", "seed",
                 "config_hash", "status", "message", "metric", "higher_is_better", "score", "chance_level",
                 "train_steps", "train_time_s", "model_reused", "code_version", "encoding_fingerprint",
                 "task_fingerprint")  # fmt: skip


def load_light(engine: Engine) -> pd.DataFrame:
    """Every result without its JSON columns (config, metrics): enough to select runs and compute deltas.

    :func:`load` decodes every JSON column of every run; here those are read only for the rows shown
    (:func:`attach_json`), which keeps a 10,000-result page well inside its time budget."""
    import pandas as pd

    cols = [getattr(Result, c) for c in LIGHT_COLUMNS]
    with engine.connect() as conn:
        rows = conn.execute(select(*cols).order_by(Result.id)).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=list(LIGHT_COLUMNS))


def attach_json(engine: Engine, sel: pd.DataFrame, columns: Sequence[str] = ("config", "metrics")) -> pd.DataFrame:
    """``sel`` with its JSON ``columns`` (by default ``config`` and ``metrics``) read from the database; a row the
    database does not hold gets ``{}``."""
    ids = [int(i) for i in sel["id"]]
    found: dict[int, tuple[Any, ...]] = {}
    with engine.connect() as conn:
        for i in range(0, len(ids), CHUNK):
            q = select(Result.id, *(getattr(Result, c) for c in columns)).where(Result.id.in_(ids[i : i + CHUNK]))
            for rid, *values in conn.execute(q):
                found[int(rid)] = tuple(v or {} for v in values)
    sel = sel.copy()
    for n, column in enumerate(columns):
        sel[column] = [found[i][n] if i in found else {} for i in ids]
    return sel


def runs(engine: Engine) -> list[dict[str, Any]]:
    """Every run row as a dict, oldest first; ``status`` as things stand (:func:`~pebench.store.lifecycle.
    effective_status`: a running run whose process is gone is ``interrupted``)."""
    with Session(engine) as s:
        return [
            {**{c.name: getattr(run, c.name) for c in Run.__table__.columns}, "status": effective_status(run)}
            for run in s.scalars(select(Run).order_by(Run.id))
        ]


def run_table(db_url: str, run_ids: Iterable[int] | None = None) -> pd.DataFrame:
    """The runs (or those of ``run_ids``) as ``pebench results`` lists them: id, status as things stand, start,
    host, device, commit and number of results."""
    import pandas as pd

    engine = open_readonly(db_url)
    try:
        rows = runs(engine)
        counts = run_counts(engine)
    finally:
        engine.dispose()
    keep = None if run_ids is None else set(run_ids)
    table = [{"run": r["id"], "status": r["status"], "started": f"{r['started_at']:%Y-%m-%d %H:%M:%S}",
              "host": r["host"], "device": r["device"], "commit": (r["git_commit"] or "-")[:10],
              "results": counts.get(r["id"], 0)} for r in rows if keep is None or r["id"] in keep]  # fmt: skip
    return pd.DataFrame(table)


def curve_points(engine: Engine, result_ids: Iterable[int]
                 ) -> Iterator[tuple[int, int, float | None, float | None, float | None]]:  # fmt: skip
    """``(result_id, step, loss, val_1x, val_2x)`` of the learning curves of ``result_ids``."""
    ids = sorted(result_ids)
    with Session(engine) as s:
        for i in range(0, len(ids), CHUNK):
            q = select(CurvePoint.result_id, CurvePoint.step, CurvePoint.loss, CurvePoint.val_1x,
                       CurvePoint.val_2x).where(  # fmt: skip
                CurvePoint.result_id.in_(ids[i : i + CHUNK])
            )
            yield from s.execute(q)
