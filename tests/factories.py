"""Hand-made rows for tests: one place that knows every field a VariantProfile (or an instance
report) needs."""

from __future__ import annotations

from typing import Any

from infaas.data.heartbeats import InstanceReport
from infaas.policy.selection import InstanceState
from infaas.schemas.variants import BatchLatency, VariantProfile


def variant_profile(**overrides: Any) -> VariantProfile:
    """A profiled CPU variant `m.v` of model `m` in app `a`; override any field by name.
    `latencies` may be given as (batch, p50_ms, p99_ms) tuples."""
    fields: dict[str, Any] = {
        "id": "m.v",
        "model": "m",
        "app": "a",
        "signature_key": "x:float32:4",
        "runtime": "onnxruntime",
        "optimization": "basic",
        "precision": "fp32",
        "hardware": "cpu",
        "max_batch": 4,
        "threads": 1,
        "artifact_digest": "0" * 64,
        "accuracy": 0.9,
        "load_ms": 1.0,
        "latencies": ((1, 1.0, 2.0), (4, 2.0, 3.0)),
        "saturation_qps": 100.0,
        "peak_memory_bytes": 1,
    }
    fields.update(overrides)
    fields["latencies"] = tuple(
        p if isinstance(p, BatchLatency) else BatchLatency(*p) for p in fields["latencies"]
    )
    return VariantProfile(**fields)


def instance_report(state: InstanceState = "active", **overrides: Any) -> InstanceReport:
    """What an executor's heartbeat says of one instance (`infaas.data.heartbeats`); override any field."""
    fields: dict[str, Any] = {
        "state": state,
        "reason": "serving",
        "pending": 0,
        "batch_limit": 1,
        "batch_delay_ms": 0.0,
        "batch_delay": "",
        "served": 0.0,
        "mean_batch": 0.0,
        "busy": 0.0,
        "slowdown": 1.0,
        "concurrency": 1,
    }
    fields.update(overrides)
    return InstanceReport(**fields)
