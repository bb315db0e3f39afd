"""The model page's SERF chart: a predicted line per concurrency and the profiled points over them."""

from __future__ import annotations

from gateway.ui.charts import CURVE_POINTS, capacity_chart
from infaas.schemas.api import ConcurrencyPoint, Variant


def _variant(interference: list[ConcurrencyPoint] | None) -> Variant:
    return Variant(
        id="m.v1",
        model="m",
        runtime="onnxruntime",
        provider="CPUExecutionProvider",
        artifact_digest="d",
        optimization="basic",
        precision="fp32",
        hardware="cpu",
        max_batch=1,
        threads=1,
        status="ready",
        status_reason=None,
        accuracy=0.9,
        load_ms=1.0,
        latency=None,
        saturation_qps=100.0,
        peak_memory_bytes=1,
        interference=interference,
        profiled_at=None,
    )


def test_one_line_per_concurrency_and_a_diamond_per_measured_point() -> None:
    profile = [
        ConcurrencyPoint(concurrency=1, p50_ms=4.0, p99_ms=5.0, qps=240.0, mean_ms=4.1, requests=10),
        ConcurrencyPoint(concurrency=2, p50_ms=5.0, p99_ms=6.0, qps=390.0, mean_ms=5.1, requests=10),
    ]
    svg = str(capacity_chart("m", [_variant(None), _variant(profile)]))
    assert svg.count('class="series"') == 2
    assert svg.count('class="point"') == 2 * CURVE_POINTS
    assert svg.count('class="measured"') == 2
    assert "measured, 2 concurrent" in svg and "v1: predicted mean latency" in svg


def test_no_profile_says_so() -> None:
    assert "no concurrency profile yet" in str(capacity_chart("m", [_variant(None)]))
    old = [ConcurrencyPoint(concurrency=1, p50_ms=0.0, p99_ms=0.0, qps=0.0)]
    assert "no concurrency profile yet" in str(capacity_chart("m", [_variant(old)]))
