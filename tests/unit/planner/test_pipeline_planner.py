"""InferLine's estimator and planner on hand-computed cases (pure: no clock, no network)."""

from __future__ import annotations

import numpy as np
import pytest

from infaas.schemas.variants import BatchLatency, VariantProfile
from services.planner.policies.pipeline_plan import PlanStage, plan
from services.planner.simulator.pipelines import StageConfig, StageShape, estimate, routes
from services.planner.simulator.serving import batched_departures


def variant(name: str, ms: dict[int, float], cost_per_s: float) -> VariantProfile:
    """A profile whose p50 = p99 latencies are `ms` per batch size; `cost_per_s` as $/s of one instance."""
    return VariantProfile(
        id=name,
        model=name.split(".")[0],
        app="a",
        signature_key="k",
        runtime="onnxruntime",
        optimization="basic",
        precision="fp32",
        hardware="cpu",
        max_batch=max(ms),
        threads=1,
        artifact_digest="d",
        accuracy=0.9,
        load_ms=10.0,
        latencies=tuple(BatchLatency(b, t, t) for b, t in sorted(ms.items())),
        saturation_qps=1.0,  # so that cost_per_s = cost_per_query × saturation = cost_per_s
        peak_memory_bytes=1,
        cost_per_query=cost_per_s,
    )


def uniform(rate: float, seconds: float) -> np.ndarray:
    return np.arange(int(rate * seconds)) / rate


def test_batched_queue_takes_what_queued_up_to_the_batch() -> None:
    # Three at 0 and one at 50 ms; batch 2 runs 15 ms, batch 1 10 ms. The server takes q0, q1 together
    # (done 15 ms), then q2 alone (queued at 15: done 25), then q3 on arrival (done 60).
    done = batched_departures(np.array([0, 0, 0, 0.05]), replicas=1, batch=2, service_s=[0.010, 0.015])
    np.testing.assert_allclose(done, [0.015, 0.015, 0.025, 0.060])
    # Two replicas at batch 1: q0 and q1 at once, q2 after the first of them frees.
    done = batched_departures(np.array([0, 0, 0.0]), replicas=2, batch=1, service_s=[0.010])
    np.testing.assert_allclose(done, [0.010, 0.010, 0.020])


def test_a_conditional_stage_adds_its_time_only_to_the_queries_it_sees() -> None:
    shapes = [StageShape("a", None), StageShape("b", "a", scale=0.5)]
    arrivals = uniform(10, 100)  # 100 ms apart: nothing ever queues
    masks = routes(shapes, arrivals.size, seed=1)
    configs = {
        "a": StageConfig(variant("a.v", {1: 4.0}, 1), 1, 1),
        "b": StageConfig(variant("b.v", {1: 6.0}, 1), 1, 1),
    }
    result = estimate(shapes, configs, arrivals, masks, overhead_ms=1.0)
    # a: 1 ms overhead + 4 ms; b adds 1 + 6 ms for the queries routed to it.
    expected = np.where(masks["b"], 12.0, 5.0)
    np.testing.assert_allclose(result.latency_ms, expected, atol=1e-6)
    assert 0.4 < masks["b"].mean() < 0.6


def test_the_serving_path_as_a_queue_delays_queries_that_arrive_together() -> None:
    # Three queries at once; each hop costs the one path server 1 ms. Query 0 visits both stages (2 ms
    # of path work), 1 and 2 only the root: they wait 2 ms and 3 ms for the path, then take their
    # hops and stages as without it (stage a 4 ms, b 6 ms, replicas enough that no stage queues).
    shapes = [StageShape("a", None), StageShape("b", "a", scale=0.5)]
    arrivals = np.zeros(3)
    masks = {"a": np.ones(3, dtype=bool), "b": np.array([True, False, False])}
    configs = {
        "a": StageConfig(variant("a.v", {1: 4.0}, 1), 1, 3),
        "b": StageConfig(variant("b.v", {1: 6.0}, 1), 1, 3),
    }
    constant = estimate(shapes, configs, arrivals, masks, overhead_ms=1.0)
    queued = estimate(shapes, configs, arrivals, masks, overhead_ms=1.0, path_servers=1)
    np.testing.assert_allclose(constant.latency_ms, [12.0, 5.0, 5.0], atol=1e-6)
    np.testing.assert_allclose(queued.latency_ms, [12.0, 7.0, 8.0], atol=1e-6)
    two = estimate(shapes, configs, arrivals, masks, overhead_ms=1.0, path_servers=2)
    np.testing.assert_allclose(two.latency_ms, [12.0, 5.0, 6.0], atol=1e-6)


FAST = variant("m.fast", {1: 1.0}, cost_per_s=10.0)
SLOW = variant("m.slow", {1: 5.0}, cost_per_s=1.0)


def test_downgrades_to_the_cheaper_variant_when_the_slo_allows_it() -> None:
    stage = PlanStage(StageShape("m", None), (FAST, SLOW))
    result = plan([stage], uniform(10, 60), slo_ms=20, overhead_ms=0)
    # Start on the fastest (1 ms); the slow one (5 ms, unqueued at 10 q/s) meets 20 ms at a tenth the cost.
    assert result.feasible and result.configs["m"].variant is SLOW
    assert result.cost_per_s == pytest.approx(1.0) and result.p99_ms == pytest.approx(5.0)
    assert result.moves == ["Downgrade to m.slow at m"]


def test_keeps_the_fast_variant_when_the_cheap_one_misses() -> None:
    result = plan([PlanStage(StageShape("m", None), (FAST, SLOW))], uniform(10, 60), slo_ms=4, overhead_ms=0)
    assert result.feasible and result.configs["m"].variant is FAST and result.moves == []


def test_every_variant_at_the_next_cost_level_is_tried_whatever_float_rounding_says() -> None:
    # Two variants at one price (as computed, a rounding apart): the one sorted last (missing at 9 ms)
    # used to be the only downgrade offered, and the plan stayed on the fast, dear variant.
    ok = variant("m.ok", {1: 3.0}, cost_per_s=1.0)
    late = variant("m.late", {1: 9.0}, cost_per_s=1.0 + 1e-15)
    result = plan(
        [PlanStage(StageShape("m", None), (FAST, ok, late))], uniform(10, 60), slo_ms=5, overhead_ms=0
    )
    assert result.feasible and result.configs["m"].variant is ok, result.moves
    assert result.moves == ["Downgrade to m.ok at m"]


def test_replicas_go_to_the_bottleneck_until_it_is_stable() -> None:
    # 250 q/s, 4 ms apart. Stage a runs 10 ms (μ = 100/s): ρ = 2.5, 1.25, then 0.83 at three replicas,
    # where round-robin leaves no query waiting (p99 = 10 + 1 ms). b (1 ms, ρ = 0.25) needs none.
    a, b = variant("a.v", {1: 10.0}, 1), variant("b.v", {1: 1.0}, 1)
    stages = [PlanStage(StageShape("a", None), (a,)), PlanStage(StageShape("b", "a"), (b,))]
    result = plan(stages, uniform(250, 20), slo_ms=30, overhead_ms=0)
    assert result.feasible
    assert (result.configs["a"].replicas, result.configs["b"].replicas) == (3, 1)
    assert result.moves == ["add replica at bottleneck a"] * 2
    assert result.p99_ms == pytest.approx(11.0)
    assert result.cost_per_s == pytest.approx(4.0)


def test_increase_batch_sheds_the_replicas_it_makes_unneeded() -> None:
    # 250 q/s on a variant of 10/11/12 ms at batch 1/2/4. Start: batch 1, 3 replicas (as above). Batch 2
    # carries 182/s per replica: 2 replicas (ρ 0.69), not 1 (1.38) — cost 2. Batch 4 carries 333/s: 1
    # replica (ρ 0.75), whose P99 is at most one batch waited for and one run (24 ms) < 50 ms — cost 1,
    # the cheapest move. Then nothing is left (no larger batch, one replica, no other variant).
    v = variant("m.v", {1: 10.0, 2: 11.0, 4: 12.0}, 1)
    result = plan([PlanStage(StageShape("m", None), (v,))], uniform(250, 20), slo_ms=50, overhead_ms=0)
    assert result.feasible
    assert (result.configs["m"].batch, result.configs["m"].replicas) == (4, 1)
    assert result.moves[-1] == "IncreaseBatch to 4 at m"
    assert result.cost_per_s == pytest.approx(1.0) and result.p99_ms <= 24.0


def test_an_slo_below_the_fastest_variant_is_infeasible_and_says_so() -> None:
    result = plan(
        [PlanStage(StageShape("m", None), (FAST, SLOW))], uniform(10, 10), slo_ms=0.5, overhead_ms=0
    )
    assert not result.feasible and "fastest" in result.reason
    assert result.configs["m"].replicas == 1  # no replicas added where they cannot help


def test_a_replica_schedule_adds_servers_from_their_time_and_retires_them_after_their_batch() -> None:
    # Four queries at 0, 10 ms each, batch 1. One replica, a second from 5 ms: q0 on the first (0-10),
    # q1 on the new one (5-15), q2 on the first again (10-20), q3 on the second (15-25).
    done = batched_departures(np.zeros(4), replicas=1, batch=1, service_s=[0.010], schedule=[(0.005, 2)])
    np.testing.assert_allclose(done, [0.010, 0.015, 0.020, 0.025])
    # Two replicas, back to one at 1 ms: both finish their first query, then one serves the rest.
    done = batched_departures(np.zeros(4), replicas=2, batch=1, service_s=[0.010], schedule=[(0.001, 1)])
    np.testing.assert_allclose(done, [0.010, 0.010, 0.020, 0.030])
