"""Variant generation and profiling of one model (the Celery task is a thin wrapper over this)."""

from __future__ import annotations

import io
import logging

import numpy as np

from infaas.artifacts import ArtifactStore
from infaas.clients.registry import RegistryClient
from infaas.config import Settings
from infaas.hardware import usable_cores
from infaas.schemas import LatencyPoint, StatusUpdate, VariantReport
from infaas.tensors import Signature
from infaas.variants import variant_id
from services.profiler.profiling import SessionMeasurement, measure_session, saturation_qps

log = logging.getLogger("infaas.profiler")

RUNTIME = "onnxruntime"
OPTIMIZATION = "basic"
PRECISION = "fp32"


def cpu_variants(model: str, digest: str, settings: Settings, cores: int) -> list[VariantReport]:
    """The ONNX Runtime CPU variant space: max batch × intra-op threads (capped at the cores)."""
    threads = sorted({min(t, cores) for t in settings.profile_threads})
    return [
        VariantReport(
            id=variant_id(
                model,
                runtime=RUNTIME,
                optimization=OPTIMIZATION,
                precision=PRECISION,
                hardware="cpu",
                max_batch=b,
                threads=t,
            ),
            runtime=RUNTIME,
            optimization=OPTIMIZATION,
            precision=PRECISION,
            hardware="cpu",
            max_batch=b,
            threads=t,
            artifact_digest=digest,
            status="pending",
        )
        for t in threads
        for b in sorted(settings.profile_batch_sizes)
    ]


def profile_model(
    model_id: int, *, registry: RegistryClient, artifacts: ArtifactStore, settings: Settings
) -> list[VariantReport]:
    """Generate the model's variants, measure them on this worker, and report each group as it lands."""
    model = registry.model(model_id)
    registry.set_status(model_id, StatusUpdate(status="profiling"))
    variants = cpu_variants(model.name, model.artifact_digest, settings, usable_cores())
    registry.report_variants(model_id, variants)

    signature = Signature.from_json(model.signature)
    try:
        with np.load(io.BytesIO(artifacts.get(model.validation_digest)), allow_pickle=False) as npz:
            labels = npz["y"]
            names = ["x"] if len(signature.inputs) == 1 else [s.name for s in signature.inputs]
            inputs = {s.name: npz[n].astype(s.dtype) for n, s in zip(names, signature.inputs, strict=True)}
        path = artifacts.path(model.artifact_digest)
    except Exception as exc:  # the registry checked these; a failure here is storage trouble
        reason = f"cannot read artifacts: {exc}"[:300]
        failed = [v.model_copy(update={"status": "failed", "status_reason": reason}) for v in variants]
        registry.report_variants(model_id, failed)
        return failed

    done: list[VariantReport] = []
    for threads in sorted({v.threads for v in variants}):
        group = [v for v in variants if v.threads == threads]
        registry.report_variants(model_id, [v.model_copy(update={"status": "profiling"}) for v in group])
        try:
            measured = measure_session(
                path,
                runtime=RUNTIME,
                hardware="cpu",
                optimization=OPTIMIZATION,
                threads=threads,
                inputs=inputs,
                labels=labels,
                largest_batch=max(v.max_batch for v in group),
                seconds_per_point=settings.profile_seconds_per_point,
                min_iterations=settings.profile_min_iterations,
            )
            reports = [_profiled(v, measured) for v in group]
        except Exception as exc:  # one bad configuration must not sink the other variants
            log.exception("profiling %s with %d threads failed", model.name, threads)
            reports = [
                v.model_copy(update={"status": "failed", "status_reason": str(exc)[:300]}) for v in group
            ]
        registry.report_variants(model_id, reports)
        done.extend(reports)
    return done


def _profiled(v: VariantReport, m: SessionMeasurement) -> VariantReport:
    points = tuple(p for p in m.latencies if p.batch <= v.max_batch)
    return v.model_copy(
        update={
            "status": "ready",
            "accuracy": round(m.accuracy, 6),
            "load_ms": round(m.load_ms, 3),
            "latency": [LatencyPoint(batch=p.batch, p50_ms=p.p50_ms, p99_ms=p.p99_ms) for p in points],
            "saturation_qps": round(saturation_qps(points, v.max_batch), 1),
            "peak_memory_bytes": m.peak_memory_bytes,
        }
    )
