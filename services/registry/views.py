"""ORM rows → wire schemas (routes never return rows)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from infaas.data.db import ApiKeyRow, AppRow, ModelRow, VariantRow
from infaas.schemas.api import (
    ApiKeyInfo,
    App,
    ConcurrencyPoint,
    LatencyPoint,
    Model,
    ModelInternal,
    SignatureOut,
    Variant,
    VariantProgress,
    VariantReport,
)
from infaas.schemas.parity import Redundancy
from infaas.schemas.selection import Selection
from services.registry import repository as repo


def app_view(row: AppRow, models: list[str], keys: list[ApiKeyRow] | None = None) -> App:
    return App(
        keys=[ApiKeyInfo(prefix=k.prefix, role=k.role, created_at=k.created_at) for k in keys or []],
        name=row.name,
        default_latency_ms=row.default_latency_ms,
        default_min_accuracy=row.default_min_accuracy,
        slo_policy=row.slo_policy,
        default_output=row.default_output,
        cache=row.cache,
        prefer=row.prefer,
        lossy=row.lossy,
        criticality=row.criticality,
        warm_instances=row.warm_instances,
        redundancy=Redundancy.model_validate(row.redundancy),
        selection=Selection.model_validate(row.selection),
        created_at=row.created_at,
        models=models,
    )


def model_views(session: Session, rows: list[ModelRow]) -> list[Model]:
    counts = repo.variant_status_counts(session, [r.id for r in rows])
    names = {a.id: a.name for a in repo.apps(session)}
    out = []
    for row in rows:
        c = counts.get(row.id, {})
        progress = VariantProgress(
            total=sum(c.values()),
            pending=c.get("pending", 0),
            profiling=c.get("profiling", 0),
            ready=c.get("ready", 0),
            failed=c.get("failed", 0),
        )
        out.append(
            Model(
                name=row.name,
                app=names.get(row.app_id, "?"),
                task=row.task,
                format=row.format,
                status=row.status,
                status_reason=row.status_reason,
                artifact_digest=row.artifact_digest,
                size_bytes=row.size_bytes,
                validation_rows=row.validation_rows,
                signature=SignatureOut.model_validate(row.signature),
                progress=progress,
                reference_accuracy=row.reference_accuracy,
                created_at=row.created_at,
                updated_at=row.updated_at,
            )
        )
    return out


def variant_view(row: VariantRow, model: str) -> Variant:
    return Variant(**_variant_fields(row), model=model, dominated=row.dominated, profiled_at=row.profiled_at)


def variant_report(row: VariantRow) -> VariantReport:
    return VariantReport(**_variant_fields(row))


def _variant_fields(row: VariantRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "runtime": row.runtime,
        "provider": row.provider,
        "optimization": row.optimization,
        "precision": row.precision,
        "hardware": row.hardware,
        "max_batch": row.max_batch,
        "threads": row.threads,
        "artifact_digest": row.artifact_digest,
        "status": row.status,
        "status_reason": row.status_reason,
        "accuracy": row.accuracy,
        "load_ms": row.load_ms,
        "latency": [LatencyPoint.model_validate(p) for p in row.latency] if row.latency else None,
        "saturation_qps": row.saturation_qps,
        "peak_memory_bytes": row.peak_memory_bytes,
        "interference": [ConcurrencyPoint.model_validate(p) for p in row.interference]
        if row.interference
        else None,
        "cost_per_s": row.cost_per_s,
        "cost_per_query": row.cost_per_query,
    }


def model_internal(row: ModelRow, app: str) -> ModelInternal:
    return ModelInternal(
        id=row.id,
        name=row.name,
        app=app,
        format=row.format,
        status=row.status,
        artifact_digest=row.artifact_digest,
        onnx_digest=row.onnx_digest,
        torchscript_digest=row.torchscript_digest,
        validation_digest=row.validation_digest,
        signature=row.signature,
        reference_accuracy=row.reference_accuracy,
        task=row.task,
    )
