"""Variants as the registry keeps them: profiler reports, dominance, the metadata store, queries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import redis
from sqlalchemy.orm import Session

from infaas.core.errors import NotFound
from infaas.data import store
from infaas.data.db import AppRow, ModelRow, VariantRow, utcnow
from infaas.policy.pareto import Point, dominated
from infaas.schemas.api import VariantReport
from infaas.schemas.variants import BatchLatency, VariantProfile
from infaas.wire.tensors import Signature
from services.registry import repository as repo

_COPIED = (
    "runtime",
    "provider",
    "optimization",
    "precision",
    "hardware",
    "max_batch",
    "threads",
    "artifact_digest",
    "status",
    "status_reason",
    "accuracy",
    "load_ms",
    "saturation_qps",
    "peak_memory_bytes",
    "cost_per_s",
    "cost_per_query",
)


def settled(v: VariantRow) -> bool:
    """Profiled, failed, or parked (pending with the reason nobody can profile it)."""
    return v.status in ("ready", "failed") or (v.status == "pending" and bool(v.status_reason))


def report_variants(session: Session, r: redis.Redis, model_id: int, reports: list[VariantReport]) -> None:
    """Upsert variants as the profiler reports them, mark dominated ones, settle the model's status,
    and publish the ready ones to the metadata store."""
    model = repo.model_by_id(session, model_id)
    if model is None:
        raise NotFound(f"no model {model_id}")
    existing = {v.id: v for v in repo.variants(session, model_id)}
    for rep in reports:
        row = existing.get(rep.id)
        if row is None:
            row = VariantRow(id=rep.id, model_id=model_id)
            session.add(row)
            existing[rep.id] = row
        for field in _COPIED:
            setattr(row, field, getattr(rep, field))
        row.latency = [p.model_dump() for p in rep.latency] if rep.latency else None
        row.interference = [p.model_dump() for p in rep.interference] if rep.interference else None
        row.profiled_at = utcnow() if rep.status == "ready" else None
    rows = list(existing.values())
    ready = [v for v in rows if v.status == "ready"]
    marked = dominated([_point(v) for v in ready])
    for v in rows:
        v.dominated = v.id in marked
    if rows and all(settled(v) for v in rows):
        model.status = "ready" if ready else "failed"
        model.status_reason = (
            None
            if ready
            else "no variant could be profiled: "
            + "; ".join(sorted({v.status_reason or "unknown" for v in rows}))[:500]
        )
    elif model.status in ("registered", "ready", "failed"):
        model.status = "profiling"
    session.commit()
    app = session.get(AppRow, model.app_id)
    assert app is not None
    stale = [v.id for v in rows if v.status != "ready"]
    if stale:  # re-profiling: what is being measured again must not be selected meanwhile
        store.unpublish_variants(r, model=model.name, app=app.name, vids=stale)
    store.publish_variants(r, [to_profile(v, model, app) for v in ready])


def _point(v: VariantRow) -> Point:
    first = (v.latency or [{"p50_ms": float("inf")}])[0]
    return Point(
        id=v.id,
        latency_ms=float(first["p50_ms"]),
        accuracy=float(v.accuracy or 0.0),
        throughput=float(v.saturation_qps or 0.0),
        cost_per_query=float(v.cost_per_query if v.cost_per_query is not None else float("inf")),
        load_ms=float(v.load_ms or 0.0),
    )


def to_profile(v: VariantRow, model: ModelRow, app: AppRow) -> VariantProfile:
    """The frozen record schedulers select from."""
    signature = Signature.from_json(model.signature)
    return VariantProfile(
        id=v.id,
        model=model.name,
        app=app.name,
        signature_key=signature.key,
        runtime=v.runtime,
        optimization=v.optimization,
        precision=v.precision,
        hardware=v.hardware,
        max_batch=v.max_batch,
        threads=v.threads,
        artifact_digest=v.artifact_digest,
        accuracy=float(v.accuracy or 0.0),
        load_ms=float(v.load_ms or 0.0),
        latencies=tuple(BatchLatency(**p) for p in (v.latency or [])),
        saturation_qps=float(v.saturation_qps or 0.0),
        peak_memory_bytes=int(v.peak_memory_bytes or 0),
        provider=v.provider,
        cost_per_query=float(v.cost_per_query or 0.0),
        dominated=v.dominated,
    )


def rebuild_metadata_store(session: Session, r: redis.Redis) -> int:
    """Publish every ready variant: Redis holds nothing that Postgres cannot restore."""
    return store.publish_variants(r, [to_profile(v, m, a) for v, m, a in repo.ready_variants(session)])


SortKey = Literal["latency", "accuracy", "cost", "throughput", "memory", "load"]


@dataclass(frozen=True)
class VariantQuery:
    """Filters and order for `GET /v1/models/{name}/variants`."""

    hardware: str | None = None
    status: str | None = None
    precision: str | None = None
    min_accuracy: float | None = None
    max_latency_ms: float | None = None
    max_cost_per_query: float | None = None
    include_dominated: bool = True
    batch: int = 1
    sort: SortKey = "latency"
    descending: bool = False


def latency_at(v: VariantRow, batch: int) -> float | None:
    """p50 latency of `batch` rows as selection sees it: the next measured batch size up, and whole
    max-size batches back to back beyond the variant's max batch. None until profiled."""
    points = v.latency or []
    if not points:
        return None
    runs = 1
    if batch > v.max_batch:
        runs = -(-batch // v.max_batch)
        batch = v.max_batch
    point = next((p for p in points if p["batch"] >= batch), points[-1])
    return runs * float(point["p50_ms"])


def select(rows: list[VariantRow], q: VariantQuery) -> list[VariantRow]:
    def keep(v: VariantRow) -> bool:
        lat = latency_at(v, q.batch)
        return (
            (q.hardware is None or v.hardware == q.hardware)
            and (q.status is None or v.status == q.status)
            and (q.precision is None or v.precision == q.precision)
            and (q.min_accuracy is None or (v.accuracy or 0.0) >= q.min_accuracy)
            and (q.max_latency_ms is None or (lat is not None and lat <= q.max_latency_ms))
            and (
                q.max_cost_per_query is None
                or (v.cost_per_query is not None and v.cost_per_query <= q.max_cost_per_query)
            )
            and (q.include_dominated or not v.dominated)
        )

    def sort_key(v: VariantRow) -> tuple[bool, float, str]:
        value = {
            "latency": latency_at(v, q.batch),
            "accuracy": v.accuracy,
            "cost": v.cost_per_query,
            "throughput": v.saturation_qps,
            "memory": float(v.peak_memory_bytes) if v.peak_memory_bytes is not None else None,
            "load": v.load_ms,
        }[q.sort]
        # Unmeasured variants go last whatever the direction.
        if value is None:
            return (True, 0.0, v.id)
        return (False, -value if q.descending else value, v.id)

    return sorted((v for v in rows if keep(v)), key=sort_key)
