"""results.axes: the sweep point of a result as its axes, ``[[name, value], ...]`` in the sweep's order (``[["lr",
"0.001"]]``; ``[]`` at no point), each value the text it has in the case id, filled for the rows already stored, so
no reader parses a point's text again (issue 87, item 5).

A point's text does not split back without its axes' names (:meth:`pebench.case.Point.parse`), so the rows are read
with those of their run's stored options (``sweep``: ``NAME=...`` and ``OWNER:NAME=...``; ``lr_sweep``: ``lr``), and
a run that stored none (written by hand) with the names its points start with before a digit. A point that reads with
neither is left ``[]`` (its text stays in ``results.point``)."""

from __future__ import annotations

import json
import re
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from pebench.case import Point

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None
SAFE = True
GUESS = re.compile(r"(?:^|-)([A-Za-z_]+?)(?=[0-9.])")
"""An axis name a point's part starts with, before its value's first digit (``layers4``, ``lr0.01``)."""


def run_names(options: Any) -> set[str]:
    """The swept axes' names of a run from its stored options (a JSON text on SQLite, a dict on PostgreSQL)."""
    if isinstance(options, str):
        options = json.loads(options or "{}")
    options = options if isinstance(options, dict) else {}
    names = {str(s).partition("=")[0].rpartition(":")[2].strip().replace("-", "_") for s in options.get("sweep") or ()}
    return names | ({"lr"} if options.get("lr_sweep") else set())


def axes_of(point: str, names: set[str]) -> list[list[str]]:
    """The stored axes of ``point`` read with ``names``, then with the names it starts its parts with; [] unread."""
    for tried in (names, names | set(GUESS.findall(point))):
        try:
            return [list(axis) for axis in Point.parse(point, tried).axes]
        except ValueError:
            continue
    return []


def upgrade() -> None:
    json = sa.JSON().with_variant(JSONB(), "postgresql")
    op.add_column("results", sa.Column("axes", json, nullable=False, server_default=sa.text("'[]'")))
    runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("options", sa.JSON))
    results = sa.table("results", sa.column("id", sa.Integer), sa.column("run_id", sa.Integer),
                       sa.column("point", sa.String), sa.column("axes", sa.JSON))  # fmt: skip
    conn = op.get_bind()
    names = {i: run_names(o) for i, o in conn.execute(sa.select(runs.c.id, runs.c.options))}
    rows = conn.execute(sa.select(results.c.id, results.c.run_id, results.c.point).where(results.c.point != "")).all()
    filled = [{"row": i, "axes": axes} for i, run, point in rows if (axes := axes_of(point, names.get(run, set())))]
    if filled:
        conn.execute(results.update().where(results.c.id == sa.bindparam("row")).values(axes=sa.bindparam("axes")),
                     filled)  # fmt: skip
