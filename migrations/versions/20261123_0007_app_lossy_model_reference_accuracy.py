"""apps.lossy and models.reference_accuracy: queries that state no accuracy get variants as accurate as the
registered model unless the app allows lossy ones

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lossy", sa.Boolean(), server_default=sa.false(), nullable=False))
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reference_accuracy", sa.Float(), nullable=True))
    # Models profiled before this revision: the same rule the registry applies on each report
    # (services/registry/profiles/reports.py `reference_accuracy`), its fallback included.
    op.execute(
        """
        UPDATE models SET reference_accuracy = COALESCE(
            (SELECT MIN(v.accuracy) FROM variants v WHERE v.model_id = models.id AND v.status = 'ready'
             AND v.precision = 'fp32' AND v.hardware = 'cpu'),
            (SELECT MAX(v.accuracy) FROM variants v WHERE v.model_id = models.id AND v.status = 'ready')
        )
        """
    )


def downgrade() -> None:
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_column("reference_accuracy")
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.drop_column("lossy")
