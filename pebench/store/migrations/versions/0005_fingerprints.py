"""The behavioural fingerprints: table ``fingerprints`` and ``results.encoding_fingerprint`` /
``results.task_fingerprint`` (empty for results stored before them; :mod:`pebench.engine.fingerprint`)."""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None
SAFE = True


def upgrade() -> None:
    json = sa.JSON().with_variant(JSONB(), "postgresql")
    op.create_table(
        "fingerprints",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("options", json, nullable=False),
        sa.Column("values", json, nullable=False),
        sa.Column("machine", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.add_column("results", sa.Column("encoding_fingerprint", sa.String(64), nullable=False, server_default=""))
    op.add_column("results", sa.Column("task_fingerprint", sa.String(64), nullable=False, server_default=""))
