"""Durable metadata: SQLAlchemy 2 rows for apps, keys, models, variants (with profiles) and workers.

The registry owns these tables; no other service writes them. The same schema runs on Postgres and on
the embedded SQLite default (Alembic migrations in `migrations/` create it on both).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    TypeDecorator,
    create_engine,
    event,
    false,
    true,
)
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored as UTC and always read back timezone-aware (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:  # noqa: ARG002
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime: use infaas.data.db.utcnow()")
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:  # noqa: ARG002
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, datetime: UTCDateTime}


class AppRow(Base):
    __tablename__ = "apps"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    default_latency_ms: Mapped[float | None] = mapped_column(Float)
    default_min_accuracy: Mapped[float | None] = mapped_column(Float)
    slo_policy: Mapped[str] = mapped_column(String(16), default="best_effort")
    default_output: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    cache: Mapped[bool] = mapped_column(Boolean, server_default=true())
    prefer: Mapped[str] = mapped_column(String(16), server_default="cost")
    # Variants less accurate than the registered model may answer queries that state no accuracy.
    lossy: Mapped[bool] = mapped_column(Boolean, server_default=false())
    # FailLite: `critical` apps keep a warm backup of their models on another worker, `normal` a cold one.
    criticality: Mapped[str] = mapped_column(String(16), server_default="normal")
    # Instances kept loaded for each of the app's models once it is ready (0: load on the first query).
    warm_instances: Mapped[int] = mapped_column(Integer, server_default="1")
    # ParM coded redundancy: {"kind": "none"} or {"kind": "parity", "k": 2..4} (infaas.schemas.parity).
    redundancy: Mapped[dict[str, Any]] = mapped_column(JSON, server_default='{"kind": "none"}')
    # Model selection (Clipper) and personalization (Velox): infaas.schemas.selection.Selection.
    selection: Mapped[dict[str, Any]] = mapped_column(JSON, server_default='{"policy": "single"}')
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ApiKeyRow(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    app_id: Mapped[int | None] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))  # "admin" | "app"
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ModelRow(Base):
    __tablename__ = "models"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    app_id: Mapped[int] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), index=True)
    task: Mapped[str] = mapped_column(String(32))
    format: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="registered")
    status_reason: Mapped[str | None] = mapped_column(Text)
    artifact_digest: Mapped[str] = mapped_column(String(64))
    onnx_digest: Mapped[str | None] = mapped_column(String(64))
    torchscript_digest: Mapped[str | None] = mapped_column(String(64))
    validation_digest: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    signature: Mapped[dict[str, Any]] = mapped_column(JSON)
    validation_rows: Mapped[int] = mapped_column(Integer)
    # The lowest validation accuracy of its ready fp32 CPU variants (the model as registered); the
    # registry sets it on every profile report.
    reference_accuracy: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
    # Profiling attempts: every enqueue starts a new attempt (the task carries its number, so a stale
    # delivery is recognised); `profile_tries` counts attempts since the last request to profile;
    # `profile_worker` is the profiler that claimed the attempt (none while it is queued) since
    # `profile_since`.
    profile_attempt: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    profile_tries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    profile_worker: Mapped[str | None] = mapped_column(String(160))
    profile_since: Mapped[datetime | None] = mapped_column(UTCDateTime())


class VariantRow(Base):
    __tablename__ = "variants"

    id: Mapped[str] = mapped_column(String(160), primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    runtime: Mapped[str] = mapped_column(String(32))
    provider: Mapped[str] = mapped_column(String(48), server_default="CPUExecutionProvider")
    optimization: Mapped[str] = mapped_column(String(32))
    precision: Mapped[str] = mapped_column(String(16))
    hardware: Mapped[str] = mapped_column(String(16))
    max_batch: Mapped[int] = mapped_column(Integer)
    threads: Mapped[int] = mapped_column(Integer)
    artifact_digest: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    status_reason: Mapped[str | None] = mapped_column(Text)
    accuracy: Mapped[float | None] = mapped_column(Float)
    load_ms: Mapped[float | None] = mapped_column(Float)
    latency: Mapped[list[Any] | None] = mapped_column(JSON)
    saturation_qps: Mapped[float | None] = mapped_column(Float)
    peak_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    interference: Mapped[list[Any] | None] = mapped_column(JSON)
    cost_per_s: Mapped[float | None] = mapped_column(Float)
    cost_per_query: Mapped[float | None] = mapped_column(Float)
    dominated: Mapped[bool] = mapped_column(Boolean, server_default=false())
    profiled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class WorkerRow(Base):
    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    hardware: Mapped[str] = mapped_column(String(16))
    url: Mapped[str] = mapped_column(String(256))
    cores: Mapped[int] = mapped_column(Integer)
    memory_bytes: Mapped[int] = mapped_column(BigInteger)
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


def make_engine(url: str) -> Engine:
    """Engine with the pooling and SQLite pragmas that let several processes share one database."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            # WAL lets readers in other processes proceed while the registry writes.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def make_sessionmaker(engine: Engine) -> sessionmaker[Any]:
    return sessionmaker(bind=engine, expire_on_commit=False)


class JobRow(Base):
    """An offline batch job: one input, split into chunks that run in spare capacity."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    app_id: Mapped[int] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), index=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    variant_id: Mapped[str | None] = mapped_column(String(160))
    state: Mapped[str] = mapped_column(String(16), index=True)
    state_reason: Mapped[str | None] = mapped_column(Text)
    min_accuracy: Mapped[float | None] = mapped_column(Float)
    decision: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    inputs: Mapped[dict[str, Any]] = mapped_column(JSON)  # input name -> digest of its .npy
    input_source: Mapped[str] = mapped_column(String(256))
    output_location: Mapped[str | None] = mapped_column(String(256))
    output_digest: Mapped[str | None] = mapped_column(String(64))
    rows_total: Mapped[int] = mapped_column(Integer)
    rows_done: Mapped[int] = mapped_column(Integer, server_default="0")
    chunk_rows: Mapped[int] = mapped_column(Integer)
    chunks_total: Mapped[int] = mapped_column(Integer)
    errors: Mapped[list[Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class JobChunkRow(Base):
    """Rows [row_start, row_end) of a job; done exactly once, whatever runs it how often."""

    __tablename__ = "job_chunks"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    index: Mapped[int] = mapped_column(Integer, primary_key=True)
    row_start: Mapped[int] = mapped_column(Integer)
    row_end: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))  # pending | leased | done | failed
    attempts: Mapped[int] = mapped_column(Integer, server_default="0")
    leased_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    output_digest: Mapped[str | None] = mapped_column(String(64))
    worker: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class EventRow(Base):
    """Something the planner decided or did (scale a model, add or drain a worker), with its reason."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    kind: Mapped[str] = mapped_column(String(32))  # model_autoscaler | worker_autoscaler
    action: Mapped[str] = mapped_column(String(32))  # replicate, upgrade, … add_worker, drain_worker
    model: Mapped[str | None] = mapped_column(String(64), index=True)
    variant: Mapped[str | None] = mapped_column(String(160))
    worker: Mapped[str | None] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16))  # decided | done | failed
    reason: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class PipelineRow(Base):
    """A pipeline (InferLine): a tree of stages over the app's models with one end-to-end P99 SLO. `spec`
    holds the stages and edges as registered (`infaas.schemas.pipelines`), `order` the stages root first;
    `plan` is the planner's last plan (None until it made one)."""

    __tablename__ = "pipelines"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    app_id: Mapped[int] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), index=True)
    slo_ms: Mapped[float] = mapped_column(Float)
    min_accuracy: Mapped[float | None] = mapped_column(Float)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    order: Mapped[list[Any]] = mapped_column(JSON)
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class PersonalHeadRow(Base):
    """A user's Velox head over a model's scores (infaas.policy.personalization.Head): the durable copy;
    the gateway keeps the hot one in Redis and writes here on every feedback."""

    __tablename__ = "personal_heads"

    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), primary_key=True)
    user: Mapped[str] = mapped_column(String(128), primary_key=True)
    a_inv: Mapped[list[Any]] = mapped_column(JSON)
    b: Mapped[list[Any]] = mapped_column(JSON)
    error: Mapped[float] = mapped_column(Float)
    model_error: Mapped[float] = mapped_column(Float)
    updates: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class ParityModelRow(Base):
    """A model's parity model (ParM): its training (a Celery task on the profiler's queue), progress, loss
    curve and degraded-mode score, and its ONNX artifact once trained. One per model: enabling parity
    again with another k starts a new `generation`, and reports of an older one are refused."""

    __tablename__ = "parity_models"

    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), primary_key=True)
    k: Mapped[int] = mapped_column(Integer)
    generation: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))  # queued | training | ready | failed
    reason: Mapped[str | None] = mapped_column(Text)
    steps_done: Mapped[int] = mapped_column(Integer, server_default="0")
    steps_total: Mapped[int] = mapped_column(Integer, server_default="0")
    losses: Mapped[list[Any]] = mapped_column(JSON)
    metric: Mapped[str | None] = mapped_column(String(16))
    deployed_score: Mapped[float | None] = mapped_column(Float)
    degraded_score: Mapped[float | None] = mapped_column(Float)
    holdout_rows: Mapped[int | None] = mapped_column(Integer)
    train_rows: Mapped[int | None] = mapped_column(Integer)
    train_seconds: Mapped[float | None] = mapped_column(Float)
    artifact_digest: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
