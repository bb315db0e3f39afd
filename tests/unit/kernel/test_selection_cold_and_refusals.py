"""Per-query variant selection (INFaaS §4.1): cold loads and their worker, refusals that name the closest
achievable, dominated, saturated and too costly variants."""

from __future__ import annotations

import pytest

from infaas.core.errors import RequirementsUnmet, Unavailable
from infaas.policy.selection import (
    InstanceView,
    Requirements,
    Snapshot,
    get_variant,
    least_utilized_worker,
)
from tests.unit.kernel.selection_fixtures import GiB, snapshot, variant, worker


def test_cold_variant_with_lowest_load_plus_latency_is_loaded() -> None:
    x = variant("x", load_ms=50.0, latencies=((1, 5.0, 10.0),))  # 60
    y = variant("y", load_ms=20.0, latencies=((1, 20.0, 30.0),))  # 50 <- best
    z = variant("z", load_ms=5.0, latencies=((1, 90.0, 100.0),))  # 105
    decision = get_variant(Requirements(), 1, [x, y, z], snapshot([x, y, z]))
    assert decision.action == "load"
    assert decision.variant.id == "y"
    assert decision.worker is not None and decision.worker.id == "w1"


def test_cold_ranking_uses_latency_at_the_query_rows() -> None:
    # At 1 row: a = 10 + 1 = 11, b = 12 + 2 = 14. At 8 rows: a = 10 + 40 = 50, b = 12 + 8 = 20.
    a = variant("a", load_ms=10.0, latencies=((1, 0.5, 1.0), (8, 30.0, 40.0)))
    b = variant("b", load_ms=12.0, latencies=((1, 1.0, 2.0), (8, 6.0, 8.0)))
    snap = snapshot([a, b])
    assert get_variant(Requirements(), 1, [a, b], snap).variant.id == "a"
    assert get_variant(Requirements(), 8, [a, b], snap).variant.id == "b"


def test_cold_load_goes_to_least_utilized_worker_with_room() -> None:
    v = variant("v", peak_memory_bytes=1000)
    workers = (
        worker("busy", utilization=0.5, memory_bytes=10_000),
        worker("full", utilization=0.0, memory_bytes=2000, memory_used_bytes=1500),  # 500 free < 1000
        worker("gpu", hardware="gpu", utilization=0.0, memory_bytes=10_000),  # wrong hardware
        worker("ok", utilization=0.3, memory_bytes=10_000, memory_used_bytes=9000),  # exactly 1000 free
    )
    decision = get_variant(Requirements(), 1, [v], snapshot([v], workers=workers))
    assert decision.action == "load"
    assert decision.worker is not None and decision.worker.id == "ok"


def test_least_utilized_worker_ties_break_on_memory_used_then_id() -> None:
    v = variant("v", peak_memory_bytes=1)
    a = worker("a", utilization=0.2, memory_used_bytes=500)
    b = worker("b", utilization=0.2, memory_used_bytes=100)
    c = worker("c", utilization=0.2, memory_used_bytes=100)
    chosen = least_utilized_worker(v, [a, c, b])
    assert chosen is not None and chosen.id == "b"


def test_least_utilized_worker_none_when_nothing_fits() -> None:
    v = variant("v", peak_memory_bytes=1001)
    assert least_utilized_worker(v, [worker("w", memory_bytes=1000)]) is None
    assert least_utilized_worker(v, []) is None


def test_no_worker_of_the_hardware_kind_is_unavailable() -> None:
    v = variant("v", hardware="gpu")
    with pytest.raises(Unavailable) as info:
        get_variant(Requirements(), 1, [v], snapshot([v], workers=(worker("c1", hardware="cpu"),)))
    assert info.value.status == 503
    assert info.value.details["hardware"] == ["gpu"]


def test_no_worker_with_enough_memory_is_unavailable() -> None:
    v = variant("v", peak_memory_bytes=2 * GiB)
    with pytest.raises(Unavailable):
        get_variant(Requirements(), 1, [v], snapshot([v], workers=(worker("w", memory_bytes=GiB),)))


def test_next_best_cold_variant_used_when_best_has_no_worker() -> None:
    gpu = variant("gpu", hardware="gpu", load_ms=1.0, latencies=((1, 0.1, 0.2),))  # best: 1.2
    cpu = variant("cpu", hardware="cpu", load_ms=50.0, latencies=((1, 4.0, 5.0),))  # 55
    decision = get_variant(Requirements(), 1, [gpu, cpu], snapshot([gpu, cpu]))
    assert decision.variant.id == "cpu"
    assert decision.worker is not None and decision.worker.hardware == "cpu"


# --- requirements nobody meets ------------------------------------------------------------------------


def test_requirements_unmet_names_the_closest_achievable() -> None:
    a = variant("a", accuracy=0.95, latencies=((1, 40.0, 50.0),))
    b = variant("b", accuracy=0.80, latencies=((1, 4.0, 5.0),))
    c = variant("c", accuracy=0.90, latencies=((1, 15.0, 20.0),))
    with pytest.raises(RequirementsUnmet) as info:
        get_variant(Requirements(slo_ms=10.0, min_accuracy=0.9), 1, [a, b, c], snapshot([a, b, c]))
    err = info.value
    assert err.status == 422
    assert err.code == "requirements_unmet"
    assert err.details["closest"] == {
        # each requirement alone is met by some variant; only the pair is not
        "unmet": [],
        "fastest": {"variant": "b", "model": "m", "latency_ms": 5.0, "accuracy": 0.8},
        "most_accurate": {"variant": "a", "model": "m", "latency_ms": 50.0, "accuracy": 0.95},
        # only b is fast enough (5 ms <= 10 ms)
        "max_accuracy_within_latency": 0.8,
        "variant_for_accuracy": "b",
        # a and c are accurate enough; c is the faster one (20 ms)
        "min_latency_ms_at_accuracy": 20.0,
        "variant_for_latency": "c",
        "best_accuracy": 0.95,
        "best_latency_ms": 5.0,
        "min_cost": 0.0,  # the test variants carry no cost
    }
    assert "none meets them together" in err.message
    assert "fastest: b (5 ms, accuracy 0.8000)" in err.message
    assert "most accurate: a (50 ms, accuracy 0.9500)" in err.message


@pytest.mark.parametrize(
    ("req", "unmet"),
    [
        (Requirements(slo_ms=1.0), ["latency"]),
        (Requirements(min_accuracy=0.99), ["accuracy"]),
        (Requirements(slo_ms=1.0, min_accuracy=0.99), ["latency", "accuracy"]),
    ],
)
def test_requirements_unmet_names_real_numbers_whichever_requirement_fails(
    req: Requirements, unmet: list[str]
) -> None:
    a = variant("a", accuracy=0.95, latencies=((1, 40.0, 50.0),))
    b = variant("b", accuracy=0.80, latencies=((1, 4.0, 5.0),))
    with pytest.raises(RequirementsUnmet) as info:
        get_variant(req, 1, [a, b], snapshot([a, b]))
    closest = info.value.details["closest"]
    assert closest["unmet"] == unmet
    assert closest["fastest"] == {"variant": "b", "model": "m", "latency_ms": 5.0, "accuracy": 0.8}
    assert closest["most_accurate"] == {"variant": "a", "model": "m", "latency_ms": 50.0, "accuracy": 0.95}
    assert None not in closest.values()
    assert f"no variant meets {' or '.join(unmet)} on its own" in info.value.message
    assert "None" not in info.value.message


def test_requirements_unmet_with_nothing_fast_enough() -> None:
    a = variant("a", accuracy=0.95, latencies=((1, 40.0, 50.0),))
    b = variant("b", accuracy=0.80, latencies=((1, 4.0, 5.0),))
    with pytest.raises(RequirementsUnmet) as info:
        get_variant(Requirements(slo_ms=1.0), 1, [a, b], snapshot([a, b]))
    closest = info.value.details["closest"]
    # Nothing is within 1 ms, so there is no "accuracy within the latency" to name; the fastest is.
    assert "max_accuracy_within_latency" not in closest
    assert closest["fastest"]["latency_ms"] == 5.0 and closest["fastest"]["accuracy"] == 0.8


def test_requirements_unmet_uses_latency_at_the_query_rows() -> None:
    v = variant("v", accuracy=0.9, latencies=((1, 1.0, 2.0), (4, 3.0, 4.0)), max_batch=4)
    with pytest.raises(RequirementsUnmet) as info:
        get_variant(Requirements(slo_ms=10.0), 10, [v], snapshot([v]))  # 3 × 4 ms = 12 ms
    assert info.value.details["closest"]["best_latency_ms"] == 12.0
    assert info.value.details["closest"]["fastest"]["latency_ms"] == 12.0


def test_requirements_unmet_with_unprofiled_latency_says_so() -> None:
    v = variant("v", accuracy=0.5, latencies=(), max_batch=1)
    with pytest.raises(RequirementsUnmet) as info:
        get_variant(Requirements(slo_ms=10.0), 1, [v], snapshot([v]))
    closest = info.value.details["closest"]
    assert closest["best_latency_ms"] is None  # infinite latency is not reported as a number
    assert closest["fastest"]["latency_ms"] is None
    assert "latency not profiled" in info.value.message
    assert closest["best_accuracy"] == 0.5


def test_empty_candidate_list_is_requirements_unmet() -> None:
    with pytest.raises(RequirementsUnmet) as info:
        get_variant(Requirements(), 1, [], snapshot([]))
    assert info.value.status == 422
    assert info.value.details["closest"] is None


def test_dominated_variants_are_skipped_unless_nothing_else_satisfies() -> None:
    from dataclasses import replace

    # The dominated variant is faster to load, so it would win the cold-start ranking were it eligible.
    dominated = replace(variant("dominated", accuracy=0.95, load_ms=1.0), dominated=True)
    better = variant("better", accuracy=0.95, load_ms=50.0)
    snap = Snapshot(workers=(worker("w1"),))
    decision = get_variant(Requirements(slo_ms=5, min_accuracy=0.9), 1, [dominated, better], snap)
    assert decision.variant.id == "better"
    # Only the dominated one meets a stricter bound at this batch: it is still used, not refused.
    slow_better = variant("slow", accuracy=0.95, latencies=((1, 10.0, 20.0),))
    fallback = get_variant(Requirements(slo_ms=5), 1, [dominated, slow_better], snap)
    assert fallback.variant.id == "dominated"


def test_pareto_marks_only_dominated_points() -> None:
    from infaas.policy.pareto import Point, dominated

    points = [
        Point("fast-cheap", latency_ms=1, accuracy=0.90, throughput=100, cost_per_query=1, load_ms=5),
        Point("accurate", latency_ms=5, accuracy=0.99, throughput=20, cost_per_query=5, load_ms=5),
        Point("worse", latency_ms=2, accuracy=0.90, throughput=50, cost_per_query=2, load_ms=5),
        Point("twin", latency_ms=1, accuracy=0.90, throughput=100, cost_per_query=1, load_ms=5),
    ]
    # `worse` loses to `fast-cheap` on every axis; identical twins do not dominate each other.
    assert dominated(points) == {"worse"}


def test_prefer_orders_active_variants_by_cost_or_latency() -> None:
    from dataclasses import replace

    cheap_slow = replace(variant("cheap", latencies=((1, 4.0, 5.0),)), cost_per_query=1e-6)
    dear_fast = replace(variant("dear", latencies=((1, 1.0, 2.0),)), cost_per_query=1e-5)
    snap = Snapshot(
        instances=(InstanceView("w1", "cheap", "active"), InstanceView("w1", "dear", "active")),
        workers=(worker("w1"),),
    )
    req = Requirements(slo_ms=10)
    by_cost = get_variant(req, 1, [cheap_slow, dear_fast], snap, prefer="cost")
    assert by_cost.variant.id == "cheap" and "cheapest" in by_cost.reason
    by_latency = get_variant(req, 1, [cheap_slow, dear_fast], snap, prefer="latency")
    assert by_latency.variant.id == "dear" and "fastest" in by_latency.reason


def test_saturated_variants_are_avoided_and_all_saturated_sheds() -> None:
    from infaas.core.errors import Overloaded

    a, b = variant("a"), variant("b", latencies=((1, 2.0, 3.0),))
    snap = Snapshot(
        instances=(InstanceView("w1", "a", "active"), InstanceView("w1", "b", "active")),
        workers=(worker("w1"),),
    )
    assert get_variant(Requirements(), 1, [a, b], snap, saturated=frozenset({"a"})).variant.id == "b"
    with pytest.raises(Overloaded) as info:
        get_variant(Requirements(), 1, [a, b], snap, saturated=frozenset({"a", "b"}))
    assert info.value.status == 503


def test_candidate_index_matches_the_per_variant_latency_model() -> None:
    from infaas.policy.selection import CandidateIndex

    vs = [
        variant("v1", latencies=((1, 1.0, 2.0), (4, 2.0, 3.0)), max_batch=4),
        variant("v2", latencies=((1, 0.5, 0.7), (16, 3.0, 4.0)), max_batch=16),
    ]
    index = CandidateIndex(vs)
    for rows in (1, 2, 3, 4, 5, 9, 16, 17, 40):
        assert list(index.latency_at(rows)) == [v.profiled_ms(rows) for v in vs], rows


def test_max_cost_caps_the_query_cost_at_its_row_count() -> None:
    from dataclasses import replace

    cheap_slow = replace(variant("cheap", latencies=((1, 4.0, 5.0), (8, 6.0, 7.0))), cost_per_query=1e-6)
    dear_fast = replace(variant("dear", latencies=((1, 1.0, 2.0), (8, 1.5, 2.0))), cost_per_query=1e-5)
    snap = Snapshot(
        instances=(InstanceView("w1", "cheap", "active"), InstanceView("w1", "dear", "active")),
        workers=(worker("w1"),),
    )
    # Fastest first, but a cap of $5e-6 per query rules the dear one out ($1e-5 a row).
    capped = get_variant(
        Requirements(slo_ms=10, max_cost=5e-6), 1, [cheap_slow, dear_fast], snap, prefer="latency"
    )
    assert capped.variant.id == "cheap"
    # 8 rows of the cheap one cost $8e-6: over a $5e-6 cap, so nothing meets the query.
    with pytest.raises(RequirementsUnmet) as unmet:
        get_variant(Requirements(max_cost=5e-6), 8, [cheap_slow, dear_fast], snap)
    assert "cost <= $5e-06" in unmet.value.message
    assert unmet.value.details["closest"]["min_cost"] == pytest.approx(8e-6)
    assert get_variant(Requirements(max_cost=1.0), 8, [cheap_slow, dear_fast], snap).variant.id == "cheap"
