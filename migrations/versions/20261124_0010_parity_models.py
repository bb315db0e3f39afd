"""apps.redundancy (ParM coded redundancy per app) and parity_models (a model's parity model: training
progress, loss curve, degraded-mode score, artifact)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 13:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("redundancy", sa.JSON(), server_default='{"kind": "none"}', nullable=False)
        )
    op.create_table(
        "parity_models",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("k", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("steps_done", sa.Integer(), server_default="0", nullable=False),
        sa.Column("steps_total", sa.Integer(), server_default="0", nullable=False),
        sa.Column("losses", sa.JSON(), nullable=False),
        sa.Column("metric", sa.String(length=16), nullable=True),
        sa.Column("deployed_score", sa.Float(), nullable=True),
        sa.Column("degraded_score", sa.Float(), nullable=True),
        sa.Column("holdout_rows", sa.Integer(), nullable=True),
        sa.Column("train_rows", sa.Integer(), nullable=True),
        sa.Column("train_seconds", sa.Float(), nullable=True),
        sa.Column("artifact_digest", sa.String(length=64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["model_id"], ["models.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("model_id"),
    )


def downgrade() -> None:
    op.drop_table("parity_models")
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.drop_column("redundancy")
