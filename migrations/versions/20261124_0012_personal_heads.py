"""personal_heads: each user's Velox head over a model's scores (durable; the gateway's Redis holds the
hot copy)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 14:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "personal_heads",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("a_inv", sa.JSON(), nullable=False),
        sa.Column("b", sa.JSON(), nullable=False),
        sa.Column("error", sa.Float(), nullable=False),
        sa.Column("model_error", sa.Float(), nullable=False),
        sa.Column("updates", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["model_id"], ["models.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("model_id", "user"),
    )


def downgrade() -> None:
    op.drop_table("personal_heads")
