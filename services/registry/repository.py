"""SQLAlchemy access to the registry's tables; no HTTP, no Redis."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from infaas.data.db import ApiKeyRow, AppRow, ModelRow, PipelineRow, VariantRow, WorkerRow


def app_by_name(session: Session, name: str) -> AppRow | None:
    return session.scalars(select(AppRow).where(AppRow.name == name)).one_or_none()


def apps(session: Session) -> list[AppRow]:
    return list(session.scalars(select(AppRow).order_by(AppRow.name)))


def key_by_hash(session: Session, key_hash: str) -> ApiKeyRow | None:
    return session.scalars(select(ApiKeyRow).where(ApiKeyRow.key_hash == key_hash)).one_or_none()


def admin_key_exists(session: Session, key_hash: str) -> bool:
    row = key_by_hash(session, key_hash)
    return row is not None and row.role == "admin"


def model_by_name(session: Session, name: str) -> ModelRow | None:
    return session.scalars(select(ModelRow).where(ModelRow.name == name)).one_or_none()


def model_by_id(session: Session, model_id: int) -> ModelRow | None:
    return session.get(ModelRow, model_id)


def models(session: Session, *, app_id: int | None = None) -> list[ModelRow]:
    query = select(ModelRow).order_by(ModelRow.name)
    if app_id is not None:
        query = query.where(ModelRow.app_id == app_id)
    return list(session.scalars(query))


def keys_by_app(session: Session) -> dict[int, list[ApiKeyRow]]:
    out: dict[int, list[ApiKeyRow]] = {}
    for key in session.scalars(select(ApiKeyRow).where(ApiKeyRow.app_id.is_not(None)).order_by(ApiKeyRow.id)):
        assert key.app_id is not None
        out.setdefault(key.app_id, []).append(key)
    return out


def model_names_by_app(session: Session) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for app_id, name in session.execute(select(ModelRow.app_id, ModelRow.name).order_by(ModelRow.name)):
        out.setdefault(app_id, []).append(name)
    return out


def variants(session: Session, model_id: int) -> list[VariantRow]:
    return list(
        session.scalars(select(VariantRow).where(VariantRow.model_id == model_id).order_by(VariantRow.id))
    )


def ready_variants(session: Session) -> list[tuple[VariantRow, ModelRow, AppRow]]:
    rows = session.execute(
        select(VariantRow, ModelRow, AppRow)
        .join(ModelRow, VariantRow.model_id == ModelRow.id)
        .join(AppRow, ModelRow.app_id == AppRow.id)
        .where(VariantRow.status == "ready")
    )
    return [(v, m, a) for v, m, a in rows]


def variant_status_counts(session: Session, model_ids: list[int]) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {}
    if not model_ids:
        return counts
    rows = session.execute(
        select(VariantRow.model_id, VariantRow.status, func.count())
        .where(VariantRow.model_id.in_(model_ids))
        .group_by(VariantRow.model_id, VariantRow.status)
    )
    for model_id, status, n in rows:
        counts.setdefault(model_id, {})[status] = n
    return counts


def digest_in_use(session: Session, digest: str, *, excluding_model: int | None = None) -> bool:
    """Whether any other model or variant still references an artifact (artifacts are shared)."""
    model_q = (
        select(func.count())
        .select_from(ModelRow)
        .where((ModelRow.artifact_digest == digest) | (ModelRow.validation_digest == digest))
    )
    variant_q = select(func.count()).select_from(VariantRow).where(VariantRow.artifact_digest == digest)
    if excluding_model is not None:
        model_q = model_q.where(ModelRow.id != excluding_model)
        variant_q = variant_q.where(VariantRow.model_id != excluding_model)
    return bool(session.scalar(model_q)) or bool(session.scalar(variant_q))


def workers(session: Session) -> list[WorkerRow]:
    return list(session.scalars(select(WorkerRow).order_by(WorkerRow.id)))


def models_in_profiling(session: Session) -> list[ModelRow]:
    """Models queued or being profiled (what the lease sweeper watches)."""
    return list(session.scalars(select(ModelRow).where(ModelRow.status.in_(("registered", "profiling")))))


def pipelines_using(session: Session, model: ModelRow) -> list[str]:
    """Names of the pipelines with a stage on `model` (a model in use is not deleted under them)."""
    found = session.scalars(select(PipelineRow).where(PipelineRow.app_id == model.app_id))
    return [p.name for p in found if any(s["model"] == model.name for s in p.spec["stages"])]
