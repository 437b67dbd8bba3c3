"""curve_points.val_1x and curve_points.val_2x: the validation values of a learning-curve point (the result's metric
on held-out batches at the training length and at twice it)."""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None
SAFE = True


def upgrade() -> None:
    op.add_column("curve_points", sa.Column("val_1x", sa.Float, nullable=True))
    op.add_column("curve_points", sa.Column("val_2x", sa.Float, nullable=True))
