"""results.code_version (a hash of the code that trained the model) and results.reused_from (the result a reused
evaluation came from)."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None
SAFE = True


def upgrade() -> None:
    op.add_column("results", sa.Column("code_version", sa.String(64), nullable=False, server_default=""))
    op.add_column("results", sa.Column("reused_from", sa.Integer, nullable=True))
