"""results.point: the sweep point of a result in its own column (``lr0.001``, ``layers4-lr0.01``; "" at no point),
filled for the rows already stored from their case ids, so no reader parses a case id again (issue 67, item 1)."""

import sqlalchemy as sa
from alembic import op

from pebench.case import point_of

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None
SAFE = True


def upgrade() -> None:
    op.add_column("results", sa.Column("point", sa.String(255), nullable=False, server_default=""))
    results = sa.table("results", sa.column("id", sa.Integer), sa.column("case_id", sa.String),
                       sa.column("point", sa.String))  # fmt: skip
    conn = op.get_bind()
    rows = conn.execute(sa.select(results.c.id, results.c.case_id)).all()
    points = [{"row": i, "point": p} for i, case_id in rows if (p := point_of(case_id))]
    if points:
        conn.execute(results.update().where(results.c.id == sa.bindparam("row")).values(point=sa.bindparam("point")),
                     points)  # fmt: skip
