"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 09:26:41.594346
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Alembic's generated commands, one function per table, run in the order they were generated.
    _create_apps()
    _create_workers()
    _create_api_keys()
    _create_models()
    _create_variants()


def _create_apps() -> None:
    op.create_table(
        "apps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("default_latency_ms", sa.Float(), nullable=True),
        sa.Column("default_min_accuracy", sa.Float(), nullable=True),
        sa.Column("slo_policy", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )


def _create_workers() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("hardware", sa.String(length=16), nullable=False),
        sa.Column("url", sa.String(length=256), nullable=False),
        sa.Column("cores", sa.Integer(), nullable=False),
        sa.Column("memory_bytes", sa.BigInteger(), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def _create_api_keys() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("app_id", sa.Integer(), nullable=True),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key_hash"),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_app_id"), ["app_id"], unique=False)


def _create_models() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("app_id", sa.Integer(), nullable=False),
        sa.Column("task", sa.String(length=32), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_reason", sa.Text(), nullable=True),
        sa.Column("artifact_digest", sa.String(length=64), nullable=False),
        sa.Column("validation_digest", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("signature", sa.JSON(), nullable=False),
        sa.Column("validation_rows", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_models_app_id"), ["app_id"], unique=False)


def _create_variants() -> None:
    op.create_table(
        "variants",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("runtime", sa.String(length=32), nullable=False),
        sa.Column("optimization", sa.String(length=32), nullable=False),
        sa.Column("precision", sa.String(length=16), nullable=False),
        sa.Column("hardware", sa.String(length=16), nullable=False),
        sa.Column("max_batch", sa.Integer(), nullable=False),
        sa.Column("threads", sa.Integer(), nullable=False),
        sa.Column("artifact_digest", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_reason", sa.Text(), nullable=True),
        sa.Column("accuracy", sa.Float(), nullable=True),
        sa.Column("load_ms", sa.Float(), nullable=True),
        sa.Column("latency", sa.JSON(), nullable=True),
        sa.Column("saturation_qps", sa.Float(), nullable=True),
        sa.Column("peak_memory_bytes", sa.BigInteger(), nullable=True),
        sa.Column("profiled_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["model_id"], ["models.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("variants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_variants_model_id"), ["model_id"], unique=False)


def downgrade() -> None:
    # ### commands auto generated by Alembic - please adjust! ###
    with op.batch_alter_table("variants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_variants_model_id"))

    op.drop_table("variants")
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_models_app_id"))

    op.drop_table("models")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_app_id"))

    op.drop_table("api_keys")
    op.drop_table("workers")
    op.drop_table("apps")
    # ### end Alembic commands ###
