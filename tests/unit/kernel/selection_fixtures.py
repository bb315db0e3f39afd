"""Hand-made variants, workers and snapshots for the selection tests."""

from __future__ import annotations

from infaas.policy.selection import (
    InstanceView,
    Snapshot,
    WorkerView,
)
from infaas.schemas.variants import BatchLatency, VariantProfile

GiB = 1024**3


def variant(
    vid: str,
    *,
    accuracy: float = 0.9,
    latencies: tuple[tuple[int, float, float], ...] = ((1, 1.0, 2.0),),
    max_batch: int | None = None,
    load_ms: float = 100.0,
    hardware: str = "cpu",
    peak_memory_bytes: int = 100,
) -> VariantProfile:
    """A profiled variant; `latencies` are (batch, p50_ms, p99_ms) points sorted by batch."""
    points = tuple(BatchLatency(batch=b, p50_ms=p50, p99_ms=p99) for b, p50, p99 in latencies)
    return VariantProfile(
        id=vid,
        model="m",
        app="app",
        signature_key="x:float32:4",
        runtime="onnxruntime",
        optimization="basic",
        precision="fp32",
        hardware=hardware,
        max_batch=max_batch if max_batch is not None else (points[-1].batch if points else 1),
        threads=1,
        artifact_digest="0" * 64,
        accuracy=accuracy,
        load_ms=load_ms,
        latencies=points,
        saturation_qps=0.0,
        peak_memory_bytes=peak_memory_bytes,
    )


def worker(
    wid: str,
    *,
    hardware: str = "cpu",
    memory_bytes: int = GiB,
    memory_used_bytes: int = 0,
    utilization: float = 0.0,
) -> WorkerView:
    return WorkerView(
        id=wid,
        hardware=hardware,
        url=f"http://{wid}",
        cores=4,
        memory_bytes=memory_bytes,
        memory_used_bytes=memory_used_bytes,
        utilization=utilization,
    )


def snapshot(
    variants: list[VariantProfile],
    instances: tuple[InstanceView, ...] = (),
    workers: tuple[WorkerView, ...] = (worker("w1"),),
) -> Snapshot:
    return Snapshot(variants={v.id: v for v in variants}, instances=instances, workers=workers)
