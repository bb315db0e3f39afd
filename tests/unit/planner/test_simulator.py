"""The simulator: queueing against a closed form, the real policies inside it, and its scale."""

from __future__ import annotations

import numpy as np
import pytest

from infaas.core import workloads
from infaas.policy.selection import WorkerView
from services.planner.simulator import SimConfig, SimModel, simulate
from tests.factories import variant_profile

MB = 1 << 20


def _workers(n: int) -> list[WorkerView]:
    return [WorkerView(f"w{i}", "cpu", "", 2, 1 << 30) for i in range(n)]


def test_a_single_server_queue_matches_m_d_1() -> None:
    # Poisson λ = 50/s, deterministic service 10 ms (μ = 100/s, ρ = 0.5): M/D/1 mean wait
    # W_q = ρ / (2μ(1 − ρ)) = 5 ms, so latency = 5 + 10 ms (no overhead, no noise: p50 = p99).
    v = variant_profile(id="m.d", max_batch=1, latencies=((1, 10.0, 10.0),), saturation_qps=100.0)
    model = SimModel("m", (v,), workloads.poisson(50, 2000, seed=1), slo_ms=1000)
    result = simulate(
        [model],
        _workers(1),
        [("m.d", "w0")],
        2000,
        SimConfig(policy="static", overhead_ms=0.0, queue_limit_s=100),
    )
    assert np.isnan(result.latency_ms).sum() == 0
    assert result.latency_ms.mean() == pytest.approx(15.0, rel=0.05)


def test_instances_serve_at_the_batch_their_slo_allows_not_at_saturation() -> None:
    # Saturation (800 rows/s) needs batches of 8, whose p99 (12 ms) the 10 ms SLO's batch share (5 ms) cannot
    # hold: the traffic forms batches of 1 (4 ms) and one instance carries 250 rows/s, as its service rate
    # says (infaas/policy/capacity.py's service_rate). 20/s fits it; 400/s (half the saturation) is overload.
    v = variant_profile(
        id="m.b",
        max_batch=8,
        latencies=((1, 4.0, 4.5), (2, 5.0, 5.5), (4, 7.0, 8.0), (8, 10.0, 12.0)),
        saturation_qps=800.0,
    )
    config = SimConfig(policy="static", overhead_ms=0.0)

    def violations(rate: float) -> float:
        model = SimModel("m", (v,), workloads.poisson(rate, 60, seed=3), slo_ms=10)
        return simulate([model], _workers(1), [("m.b", "w0")], 60, config).violation_ratio

    assert violations(20) < 0.05
    assert violations(400) > 0.9


def test_the_real_greedy_policy_replicates_as_load_rises_and_static_does_not() -> None:
    v = variant_profile(
        id="m.a",
        max_batch=1,
        latencies=((1, 2.0, 3.0),),
        saturation_qps=100.0,
        cost_per_query=1e-6,
        load_ms=500,
    )
    rates = np.concatenate([np.full(30, 50.0), np.full(60, 180.0)])
    model = SimModel("m", (v,), workloads.arrivals(rates, seed=2), slo_ms=50)
    greedy = simulate([model], _workers(3), [("m.a", "w0")], 90, SimConfig(policy="greedy"))
    static = simulate([model], _workers(3), [("m.a", "w0")], 90, SimConfig(policy="static"))
    assert [d.action for _, d in greedy.decisions][:1] == ["replicate"]
    # 180 × 1.05 = 189 needs 2; Poisson noise in the 2 s load window may briefly ask for a third
    assert 2 <= greedy.instances[-1] <= 3
    assert static.instances[-1] == 1 and static.decisions == []
    # static sheds what one instance cannot take; the replica serves it
    assert static.violation_ratio > 0.2 > greedy.violation_ratio
    assert static.cost.sum() < greedy.cost.sum()


def test_a_requested_worker_arrives_after_its_start_time() -> None:
    v = variant_profile(
        id="m.a", max_batch=1, latencies=((1, 2.0, 3.0),), saturation_qps=100.0, cost_per_query=1e-6
    )
    model = SimModel("m", (v,), workloads.poisson(150, 60, seed=3), slo_ms=50)
    config = SimConfig(policy="greedy", worker_template=_workers(1)[0], worker_start_s=10)
    result = simulate([model], _workers(1), [("m.a", "w0")], 60, config)
    asks = [t for t, d in result.decisions if d.action == "request_worker"]
    loads = [t for t, d in result.decisions if d.action == "replicate"]
    assert asks and loads and loads[0] >= asks[0] + 10


def test_an_hour_at_1000_qps_and_a_1000_worker_cluster_run() -> None:
    v = variant_profile(
        id="m.b",
        max_batch=16,
        latencies=((1, 1.0, 2.0), (16, 8.0, 10.0)),
        saturation_qps=1600.0,
        cost_per_query=1e-7,
    )
    hour = simulate(
        [SimModel("m", (v,), workloads.poisson(1000, 3600, seed=4), slo_ms=50)],
        _workers(2),
        [("m.b", "w0")],
        3600,
        SimConfig(policy="greedy"),
    )
    assert hour.offered.sum() == hour.arrivals.size and hour.p(99) < 50
    # 1,000 workers, 100 models of 200 qps each, 60 s
    models, initial = [], []
    for i in range(100):
        vi = variant_profile(
            id=f"m{i}.a",
            model=f"m{i}",
            max_batch=1,
            latencies=((1, 2.0, 3.0),),
            saturation_qps=100.0,
            cost_per_query=1e-6,
        )
        models.append(SimModel(f"m{i}", (vi,), workloads.poisson(200, 60, seed=i), slo_ms=50))
        initial.append((vi.id, f"w{i}"))
    big = simulate(models, _workers(1000), initial, 60, SimConfig(policy="greedy"))
    assert sum(d.action == "replicate" for _, d in big.decisions) >= 100
    assert big.instances[-1] >= 300  # 200 × 1.05 needs 3 instances of 100 qps per model


def test_the_worker_autoscaler_adds_workers_under_load_and_removes_idle_ones() -> None:
    from services.planner.policies.worker_pool import WorkerConfig

    v = variant_profile(
        id="m.a",
        max_batch=1,
        latencies=((1, 2.0, 3.0),),
        saturation_qps=100.0,
        cost_per_query=1e-6,
        load_ms=100,
    )
    rates = np.concatenate([np.full(60, 300.0), np.full(120, 20.0)])
    model = SimModel("m", (v,), workloads.arrivals(rates, seed=9), slo_ms=50)
    config = SimConfig(
        policy="greedy",
        worker_template=_workers(1)[0],
        worker_start_s=5,
        workers=WorkerConfig(idle_s=10, min_workers=1, max_workers=6),
    )
    result = simulate([model], _workers(1), [("m.a", "w0")], 180, config)
    adds = [t for t, d in result.worker_decisions if d.action == "add_worker"]
    drains = [t for t, d in result.worker_decisions if d.action == "drain_worker"]
    # 300 × 1.05 needs 4 instances of 100 qps, one per worker: three workers are added, one at a time
    assert len(adds) >= 3 and all(b - a >= 5 for a, b in zip(adds, adds[1:], strict=False))
    assert result.workers.max() >= 4 and result.instances.max() >= 4
    # at 20 qps one instance carries the load: replicas go after T_v, then their idle workers after 10 s
    assert drains and min(drains) > 60
    assert result.workers[-1] < result.workers.max() and result.instances[-1] == 1
    assert result.violation_ratio < 0.5
