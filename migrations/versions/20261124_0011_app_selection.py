"""apps.selection: model selection (Clipper) and personalization (Velox) per app

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 14:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("selection", sa.JSON(), server_default='{"policy": "single"}', nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.drop_column("selection")
