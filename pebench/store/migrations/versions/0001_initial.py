"""The results database as pebench wrote it before it carried revisions: runs, results (without
``code_version`` and ``reused_from``) and curve_points. Frozen here: later schema changes never edit this file."""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None
SAFE = True


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("started_at", sa.DateTime, nullable=False),
        sa.Column("finished_at", sa.DateTime, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("git_commit", sa.String(64), nullable=True),
        sa.Column("git_dirty", sa.Boolean, nullable=True),
        sa.Column("package_version", sa.String(32), nullable=False),
        sa.Column("torch_version", sa.String(64), nullable=False),
        sa.Column("python_version", sa.String(32), nullable=False),
        sa.Column("device", sa.String(128), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("platform", sa.String(255), nullable=False),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("options", sa.JSON, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("schema_version", sa.Integer, nullable=False),
    )
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("case_id", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("encoding", sa.String(64), nullable=False),
        sa.Column("encoding_version", sa.String(16), nullable=False),
        sa.Column("task", sa.String(64), nullable=False),
        sa.Column("task_version", sa.String(16), nullable=False),
        sa.Column("train_length", sa.Integer, nullable=False),
        sa.Column("eval_length", sa.Integer, nullable=False),
        sa.Column("seed", sa.Integer, nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("config_hash", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("metric", sa.String(32), nullable=False),
        sa.Column("higher_is_better", sa.Boolean, nullable=False),
        sa.Column("score", sa.Float, nullable=True),
        sa.Column("loss", sa.Float, nullable=True),
        sa.Column("token_accuracy", sa.Float, nullable=True),
        sa.Column("sequence_accuracy", sa.Float, nullable=True),
        sa.Column("chance_level", sa.Float, nullable=True),
        sa.Column("train_steps", sa.Integer, nullable=True),
        sa.Column("train_time_s", sa.Float, nullable=True),
        sa.Column("tokens_per_s", sa.Float, nullable=True),
        sa.Column("final_train_loss", sa.Float, nullable=True),
        sa.Column("eval_time_s", sa.Float, nullable=True),
        sa.Column("model_reused", sa.Boolean, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
    )
    op.create_index("ix_results_run_id", "results", ["run_id"])
    op.create_index("ix_results_encoding", "results", ["encoding"])
    op.create_index("ix_results_task", "results", ["task"])
    op.create_index("ix_results_config_hash", "results", ["config_hash"])
    op.create_table(
        "curve_points",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("result_id", sa.Integer, sa.ForeignKey("results.id"), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("loss", sa.Float, nullable=True),
        sa.Column("accuracy", sa.Float, nullable=True),
    )
    op.create_index("ix_curve_points_result_id", "curve_points", ["result_id"])
