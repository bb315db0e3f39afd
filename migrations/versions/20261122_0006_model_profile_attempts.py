"""models: profiling attempts, their claiming profiler and since when (leased profiling)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.add_column(sa.Column("profile_attempt", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("profile_tries", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("profile_worker", sa.String(length=160), nullable=True))
        batch_op.add_column(sa.Column("profile_since", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_column("profile_since")
        batch_op.drop_column("profile_worker")
        batch_op.drop_column("profile_tries")
        batch_op.drop_column("profile_attempt")
