"""Profiler reports into the registry: upsert the model's variants, mark the dominated ones, settle the
model's status, and publish the ready variants to the Redis metadata store (`variants/republish.py`
publishes them all)."""

from __future__ import annotations

import redis
from sqlalchemy.orm import Session

from infaas.core.errors import NotFound
from infaas.data import store
from infaas.data.db import AppRow, ModelRow, VariantRow, utcnow
from infaas.policy.pareto import Point, dominated
from infaas.schemas.api import ConcurrencyPoint, VariantReport
from infaas.schemas.variants import BatchLatency, VariantProfile
from infaas.wire.tensors import Signature
from services.registry import repository as repo
from services.registry.profiles.attempts import check_attempt
from services.registry.variants.capacity import mean_latencies

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


def report_variants(
    session: Session,
    r: redis.Redis,
    model_id: int,
    reports: list[VariantReport],
    *,
    attempt: int | None = None,
) -> None:
    """Upsert variants as the profiler reports them, mark dominated ones, settle the model's status,
    and publish the ready ones to the metadata store; a stale attempt's report is refused (409)."""
    model = repo.model_by_id(session, model_id)
    if model is None:
        raise NotFound(f"no model {model_id}")
    check_attempt(model, attempt)
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
    model.reference_accuracy = reference_accuracy(ready)
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


def reference_accuracy(ready: list[VariantRow]) -> float | None:
    """The accuracy of the model as registered: the lowest of its fp32 CPU forms (the uploaded graph
    at each ONNX Runtime optimization level, or the TorchScript module itself: the same function, so
    every one of them counts as the model and none is left out for a borderline row that float
    reordering flipped). The profiler measures them first; until one is ready (or when none could be),
    the most accurate ready variant stands in, so no lossy form slips under an unknown floor."""
    fp32 = [
        v.accuracy for v in ready if v.precision == "fp32" and v.hardware == "cpu" and v.accuracy is not None
    ]
    if fp32:
        return min(fp32)
    measured = [v.accuracy for v in ready if v.accuracy is not None]
    return max(measured) if measured else None


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
        latencies=tuple(
            BatchLatency(batch=p["batch"], p50_ms=p["p50_ms"], p99_ms=p["p99_ms"]) for p in (v.latency or [])
        ),
        saturation_qps=float(v.saturation_qps or 0.0),
        peak_memory_bytes=int(v.peak_memory_bytes or 0),
        provider=v.provider,
        cost_per_query=float(v.cost_per_query or 0.0),
        dominated=v.dominated,
        # The model's own tensor names: offline chunks and PyTorch engines feed inputs by name.
        input_names=tuple(s.name for s in signature.inputs),
        output_names=tuple(s.name for s in signature.outputs),
        reference_accuracy=model.reference_accuracy,
        task=model.task,
        concurrency_ms=tuple(
            mean_latencies([ConcurrencyPoint.model_validate(p) for p in v.interference or []])
        ),
    )
