"""One model `m` with three variants and a small cluster, shared by the autoscaler and ILP tests.
Costs are chosen so the hand-computed ILP costs below are round: C = cost_per_query × saturation."""

from __future__ import annotations

from dataclasses import replace

from infaas.policy.selection import InstanceView, WorkerView
from infaas.schemas.variants import BatchLatency, VariantProfile
from services.planner.policies.snapshot import ClusterSnapshot, ModelDemand
from tests.factories import variant_profile

GIB = 1 << 30
MB = 1 << 20

# a: CPU batch 1, 100 qps, C = 1e-4 $/s, loads in 0.1 s, p99 2 ms
A = variant_profile(
    id="m.a",
    max_batch=1,
    latencies=((1, 1.0, 2.0),),
    saturation_qps=100.0,
    cost_per_query=1e-6,
    load_ms=100.0,
    peak_memory_bytes=100 * MB,
)
# b: CPU batch 16, 400 qps, C = 2e-4 $/s, loads in 0.2 s, p99 10 ms at 16
B = variant_profile(
    id="m.b",
    max_batch=16,
    latencies=((1, 1.0, 2.0), (16, 8.0, 10.0)),
    saturation_qps=400.0,
    cost_per_query=5e-7,
    load_ms=200.0,
    peak_memory_bytes=100 * MB,
)
# g: CUDA batch 8, 2000 qps, C = 2e-3 $/s, loads in 2 s, p99 5 ms at 8
G = variant_profile(
    id="m.g",
    hardware="cuda",
    max_batch=8,
    latencies=((1, 1.0, 2.0), (8, 4.0, 5.0)),
    saturation_qps=2000.0,
    cost_per_query=1e-6,
    load_ms=2000.0,
    peak_memory_bytes=100 * MB,
)
VARIANTS = (A, B, G)
# b when even one row misses a 5 ms SLO (p99 8 ms at batch 1): no batch of it fits, so it is ineligible
SLOW_B = replace(B, latencies=(BatchLatency(1, 6.0, 8.0), BatchLatency(16, 8.0, 10.0)))


def worker(wid: str, utilization: float = 0.0, hardware: str = "cpu", memory: int = GIB) -> WorkerView:
    return WorkerView(wid, hardware, f"http://{wid}", 2, memory, 0, utilization)


CPU3 = (worker("w1", 0.5), worker("w2", 0.1), worker("w3", 0.2))


def snapshot(
    load: float,
    running: list[tuple[str, str]],
    workers: tuple[WorkerView, ...] = CPU3,
    *,
    now: float = 100.0,
    slo_ms: float | None = None,
    variants: tuple[VariantProfile, ...] = VARIANTS,
) -> ClusterSnapshot:
    """`running` is (variant id, worker id) of active instances."""
    return ClusterSnapshot(
        now=now,
        demands=(ModelDemand("m", load, variants, slo_ms=slo_ms),),
        workers=workers,
        instances=tuple(InstanceView(w, v, "active") for v, w in running),
    )
