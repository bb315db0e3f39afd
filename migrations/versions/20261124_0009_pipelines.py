"""pipelines (InferLine): stages over registered models with one end-to-end P99 SLO, and their plan

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 12:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pipelines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("app_id", sa.Integer(), nullable=False),
        sa.Column("slo_ms", sa.Float(), nullable=False),
        sa.Column("min_accuracy", sa.Float(), nullable=True),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("order", sa.JSON(), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    with op.batch_alter_table("pipelines", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pipelines_app_id"), ["app_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("pipelines", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pipelines_app_id"))
    op.drop_table("pipelines")
