"""Read results back: :func:`load` returns a pandas DataFrame with one row per result, joined with its run."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from pebench import db


def load(db_url: str, run: int | str | None = None) -> pd.DataFrame:
    """Results of every run (or of ``run``: an id, ``latest`` or ``previous``) as a DataFrame.

    Columns: every column of the ``results`` table, plus the run's provenance prefixed ``run_`` (``run_git_commit``,
    ``run_device``, ...). ``config`` and ``metrics`` stay as dicts.
    """
    engine = db.open_db(db_url, create=False)
    try:
        db.Base.metadata.create_all(engine)  # an older empty file gains the tables; existing rows are untouched
        query = select(db.Result, db.Run).join(db.Run, db.Result.run_id == db.Run.id).order_by(db.Result.id)
        if run is not None:
            query = query.where(db.Result.run_id == db.resolve_run_id(engine, run))
        rows = []
        with Session(engine) as s:
            for result, run_row in s.execute(query):
                row = {c.name: getattr(result, c.name) for c in db.Result.__table__.columns}
                for c in db.Run.__table__.columns:
                    if c.name != "id":
                        row[f"run_{c.name}"] = getattr(run_row, c.name)
                rows.append(row)
    finally:
        engine.dispose()
    columns = [c.name for c in db.Result.__table__.columns] + [
        f"run_{c.name}" for c in db.Run.__table__.columns if c.name != "id"
    ]
    return pd.DataFrame(rows, columns=columns)
