"""Per-query variant selection (INFaaS §4.1): the latency model, and the choice among active instances."""

from __future__ import annotations

import math

import pytest

from infaas.policy.selection import (
    InstanceState,
    InstanceView,
    Requirements,
    get_variant,
    meets,
)
from tests.unit.kernel.selection_fixtures import snapshot, variant, worker

# --- VariantProfile.latency_ms ------------------------------------------------------------------------


LADDER = ((1, 1.0, 2.0), (2, 1.5, 2.5), (4, 3.0, 4.0))


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (1, 2.0),  # exact point
        (2, 2.5),  # exact point
        (3, 4.0),  # next measured batch up is 4
        (4, 4.0),
        (5, 2 * 4.0),  # ceil(5 / 4) = 2 full batches of 4
        (8, 2 * 4.0),
        (10, 3 * 4.0),  # ceil(10 / 4) = 3 full batches of 4
    ],
)
def test_latency_uses_next_batch_up_and_runs_back_to_back(rows: int, expected: float) -> None:
    v = variant("v", latencies=LADDER, max_batch=4)
    assert v.profiled_ms(rows) == pytest.approx(expected)


def test_latency_tail_false_uses_p50() -> None:
    v = variant("v", latencies=LADDER, max_batch=4)
    assert v.profiled_ms(1, tail=False) == pytest.approx(1.0)
    assert v.profiled_ms(3, tail=False) == pytest.approx(3.0)
    assert v.profiled_ms(10, tail=False) == pytest.approx(3 * 3.0)


def test_latency_beyond_last_measured_point_uses_last_point() -> None:
    # Measured only up to batch 2 but allowed batches of 4: a 3-row query is priced at the last point.
    v = variant("v", latencies=((1, 1.0, 2.0), (2, 1.5, 2.5)), max_batch=4)
    assert v.profiled_ms(3) == pytest.approx(2.5)


def test_latency_of_unprofiled_variant_is_infinite() -> None:
    v = variant("v", latencies=(), max_batch=4)
    assert math.isinf(v.profiled_ms(1))


# --- meets --------------------------------------------------------------------------------------------


def test_meets_checks_tail_latency_and_accuracy() -> None:
    v = variant("v", accuracy=0.9, latencies=((1, 5.0, 9.0),))
    assert meets(v, Requirements(), 1)
    assert meets(v, Requirements(slo_ms=9.0, min_accuracy=0.9), 1)  # both bounds inclusive
    assert not meets(v, Requirements(slo_ms=8.0), 1)  # p50 5 fits, p99 9 does not
    assert not meets(v, Requirements(min_accuracy=0.91), 1)


def test_meets_depends_on_the_row_count() -> None:
    v = variant("v", latencies=((1, 1.0, 2.0), (4, 3.0, 4.0)), max_batch=4)
    req = Requirements(slo_ms=10.0)
    assert meets(v, req, 8)  # 2 × 4 ms
    assert not meets(v, req, 12)  # 3 × 4 ms = 12 ms


# --- active variants ----------------------------------------------------------------------------------


def test_active_instance_preferred_over_faster_inactive_variant() -> None:
    slow = variant("slow", latencies=((1, 8.0, 10.0),))
    fast = variant("fast", latencies=((1, 0.5, 1.0),), load_ms=1.0)
    snap = snapshot([slow, fast], instances=(InstanceView("w1", "slow", "active"),))

    decision = get_variant(Requirements(slo_ms=20.0), 1, [slow, fast], snap)

    assert decision.action == "active"
    assert decision.variant.id == "slow"
    assert decision.worker is None


def test_fastest_active_variant_at_the_query_row_count() -> None:
    # a is faster for one row, b is faster for eight.
    a = variant("a", latencies=((1, 0.5, 1.0), (8, 15.0, 20.0)))
    b = variant("b", latencies=((1, 2.0, 3.0), (8, 8.0, 10.0)))
    snap = snapshot(
        [a, b],
        instances=(InstanceView("w1", "a", "active"), InstanceView("w1", "b", "active")),
    )
    assert get_variant(Requirements(), 1, [a, b], snap).variant.id == "a"
    assert get_variant(Requirements(), 8, [a, b], snap).variant.id == "b"


def test_active_variant_that_misses_requirements_is_not_chosen() -> None:
    inaccurate = variant("inaccurate", accuracy=0.7, latencies=((1, 0.5, 1.0),))
    accurate = variant("accurate", accuracy=0.95, latencies=((1, 4.0, 5.0),))
    snap = snapshot(
        [inaccurate, accurate],
        instances=(InstanceView("w1", "inaccurate", "active"), InstanceView("w1", "accurate", "active")),
    )
    decision = get_variant(Requirements(min_accuracy=0.9), 1, [inaccurate, accurate], snap)
    assert decision.action == "active"
    assert decision.variant.id == "accurate"


def test_active_instance_of_variant_not_in_candidates_is_ignored() -> None:
    other = variant("other", latencies=((1, 0.1, 0.2),))
    mine = variant("mine", latencies=((1, 1.0, 2.0),))
    snap = snapshot([other, mine], instances=(InstanceView("w1", "other", "active"),))
    decision = get_variant(Requirements(), 1, [mine], snap)
    assert decision.action == "load"
    assert decision.variant.id == "mine"


@pytest.mark.parametrize("state", ["inactive", "failed"])
def test_unusable_instances_are_never_treated_as_active(state: InstanceState) -> None:
    # `busy` is the fastest, but its only instance is unusable; `cold` has no instance at all.
    busy = variant("busy", latencies=((1, 0.1, 0.2),), load_ms=1.0)
    cold = variant("cold", latencies=((1, 4.0, 5.0),), load_ms=50.0)
    snap = snapshot([busy, cold], instances=(InstanceView("w1", "busy", state),))

    decision = get_variant(Requirements(), 1, [busy, cold], snap)

    assert decision.action == "load"
    # A variant with an instance somewhere is not cold: the truly cold one is loaded instead.
    assert decision.variant.id == "cold"


@pytest.mark.parametrize("state", ["loading", "overloaded", "interfered"])
def test_a_loading_overloaded_or_interfered_instance_is_queued_for_not_loaded_around(
    state: InstanceState,
) -> None:
    # Capacity is the planner's to add: the query waits for the instance that is there (or is shed
    # by the queue limit, which the planner counts as demand) instead of cold-loading another variant.
    busy = variant("busy", latencies=((1, 0.1, 0.2),), load_ms=1.0)
    cold = variant("cold", latencies=((1, 4.0, 5.0),), load_ms=50.0)
    snap = snapshot([busy, cold], instances=(InstanceView("w1", "busy", state),))

    decision = get_variant(Requirements(), 1, [busy, cold], snap)

    assert (decision.action, decision.variant.id, decision.worker) == ("active", "busy", None)
    assert "planner" in decision.reason


def test_only_variant_with_a_failed_instance_is_loaded_again() -> None:
    only = variant("only", latencies=((1, 1.0, 2.0),))
    snap = snapshot(
        [only],
        instances=(InstanceView("w1", "only", "failed"),),
        workers=(worker("w1", utilization=0.9), worker("w2", utilization=0.1)),
    )
    decision = get_variant(Requirements(), 1, [only], snap)
    assert decision.action == "load"
    assert decision.variant.id == "only"
    assert decision.worker is not None and decision.worker.id == "w2"


# --- cold variants ------------------------------------------------------------------------------------
