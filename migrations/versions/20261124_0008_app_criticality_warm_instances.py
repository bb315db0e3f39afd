"""apps.criticality (FailLite backups: critical apps keep warm backups, normal apps cold ones) and
apps.warm_instances (instances kept loaded per model once it is ready)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 06:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("criticality", sa.String(length=16), server_default="normal", nullable=False)
        )
        batch_op.add_column(sa.Column("warm_instances", sa.Integer(), server_default="1", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.drop_column("warm_instances")
        batch_op.drop_column("criticality")
