"""Hand-made rows for tests: one place that knows every field a VariantProfile needs."""

from __future__ import annotations

from typing import Any

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
