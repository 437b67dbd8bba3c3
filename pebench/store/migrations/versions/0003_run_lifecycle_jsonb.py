"""runs.pid and runs.heartbeat_at (a run whose process is gone is seen as interrupted), and on PostgreSQL the JSON
columns as jsonb."""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None
SAFE = True

JSON_COLUMNS = {"runs": ("options",), "results": ("config", "metrics")}


def upgrade() -> None:
    op.add_column("runs", sa.Column("pid", sa.Integer, nullable=True))
    op.add_column("runs", sa.Column("heartbeat_at", sa.DateTime, nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONB

        for table, columns in JSON_COLUMNS.items():
            for column in columns:
                op.alter_column(table, column, type_=JSONB(), postgresql_using=f"{column}::jsonb")
