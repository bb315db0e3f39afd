"""Delayed batching chosen by the instance (services/executor/batching.py: batch_delay) and how the
consumer applies the configured override (services/executor/consumers.py: batch_delay_for)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from services.executor.batching import AIMD, batch_delay
from services.executor.consumers import AUTO_DELAY_CAP_MS, batch_delay_for
from services.executor.instance_state import InstanceMonitor
from services.executor.serving import Instance
from tests.factories import variant_profile
from tests.orders import order

# The Clipper case: ~1 ms per call whatever the batch (0.99 ms fixed + 0.01 ms per row).
FIXED_COST = variant_profile(max_batch=32, latencies=((1, 1.0, 1.2), (32, 1.31, 1.5)))
# Cost grows with the rows: batching gains little.
PER_ROW = variant_profile(max_batch=32, latencies=((1, 1.0, 1.1), (32, 30.0, 31.0)))


def test_fixed_cost_under_load_waits_up_to_the_cap_for_a_full_batch() -> None:
    d = batch_delay(FIXED_COST, offered_rps=500, limit=32, slo_ms=50, cap_ms=5)
    # fixed/per_row = 99 rows, capped at the limit; 31 more rows at 500/s take 62 ms > the 5 ms cap
    assert d.ms == pytest.approx(5.0)
    assert d.target_rows == 32
    assert "0.99 ms + 0.010 ms/row" in d.reason


def test_the_wait_is_the_time_the_offered_rate_takes_to_fill_the_target() -> None:
    d = batch_delay(FIXED_COST, offered_rps=20_000, limit=32, slo_ms=50, cap_ms=5)
    assert d.ms == pytest.approx(31 / 20_000 * 1000)  # 1.55 ms


def test_target_rows_where_the_fixed_cost_is_down_to_a_rows_own_cost() -> None:
    profile = variant_profile(max_batch=16, latencies=((1, 2.0, 2.0), (16, 5.0, 5.0)))
    d = batch_delay(profile, offered_rps=100_000, limit=16, slo_ms=100, cap_ms=5)
    # per_row = 3/15 = 0.2 ms, fixed = 1.8 ms: 9 rows; 8 more at 100k rows/s take 0.08 ms
    assert d.target_rows == 9
    assert d.ms == pytest.approx(0.08)


@pytest.mark.parametrize(
    ("profile", "offered", "limit", "slo", "why"),
    [
        (FIXED_COST, 100, 32, 50, "of one-at-a-time capacity"),  # 10 % busy: mates too rare
        (PER_ROW, 5000, 32, 50, "batching gains only"),
        (FIXED_COST, 500, 1, 50, "batches of one query"),  # AIMD limit 1
        (FIXED_COST, 500, 32, 1.0, "no room"),  # the batch alone would miss a 1 ms SLO
        (variant_profile(max_batch=32, latencies=()), 500, 32, 50, "no profiled latency"),
    ],
)
def test_no_wait(profile: object, offered: float, limit: int, slo: float, why: str) -> None:
    d = batch_delay(profile, offered_rps=offered, limit=limit, slo_ms=slo, cap_ms=5)  # type: ignore[arg-type]
    assert d.ms == 0.0
    assert why in d.reason


def test_a_small_slo_bounds_the_wait_to_a_quarter_of_it() -> None:
    d = batch_delay(FIXED_COST, offered_rps=500, limit=32, slo_ms=4.0, cap_ms=5)
    assert d.ms == pytest.approx(1.0)


def instance(profile: object, offered_rps: float) -> Instance:
    monitor = InstanceMonitor(profile)  # type: ignore[arg-type]
    monitor.offered_rps = offered_rps
    return Instance(profile=profile, monitor=monitor, aimd=AIMD(cap=32, size=32))  # type: ignore[arg-type]


def worker(configured: float | None) -> SimpleNamespace:
    return SimpleNamespace(max_queue_delay_ms=configured, default_slo_ms=20.0)


def test_the_consumer_uses_the_instance_choice_and_the_oldest_orders_slo() -> None:
    inst = instance(FIXED_COST, 500)
    d = batch_delay_for(worker(None), inst, 32, order(slo_ms=8.0))  # type: ignore[arg-type]
    assert d.ms == pytest.approx(2.0)  # a quarter of 8 ms
    assert inst.delay is d  # kept for the heartbeat
    d = batch_delay_for(worker(None), inst, 32, None)  # type: ignore[arg-type]
    assert d.ms == pytest.approx(min(AUTO_DELAY_CAP_MS, 20.0 / 4))  # the default SLO


def test_a_configured_delay_overrides_and_zero_never_waits() -> None:
    inst = instance(FIXED_COST, 0)
    assert batch_delay_for(worker(3.0), inst, 32, None).ms == 3.0  # type: ignore[arg-type]
    assert batch_delay_for(worker(0.0), instance(FIXED_COST, 10_000), 32, None).ms == 0.0  # type: ignore[arg-type]


def test_row_coupled_precisions_never_wait() -> None:
    profile = variant_profile(
        max_batch=32, precision="int8-dynamic", latencies=((1, 1.0, 1.2), (32, 1.31, 1.5))
    )
    d = batch_delay_for(worker(None), instance(profile, 10_000), 32, None)  # type: ignore[arg-type]
    assert d.ms == 0.0 and "one query per batch" in d.reason


def test_the_choice_is_remembered_until_what_it_depends_on_changes() -> None:
    """`batch_delay_for` is asked per query: the same inputs give the same object back; a new offered
    rate (the monitor's next window), another limit, SLO or configured delay work it out again."""
    inst = instance(FIXED_COST, 500)
    first = batch_delay_for(worker(None), inst, 32, order(slo_ms=8.0))  # type: ignore[arg-type]
    assert batch_delay_for(worker(None), inst, 32, order(slo_ms=8.0)) is first  # type: ignore[arg-type]
    assert batch_delay_for(worker(None), inst, 32, order(slo_ms=40.0)).ms == pytest.approx(5.0)  # type: ignore[arg-type]
    assert "at 2 rows" in batch_delay_for(worker(None), inst, 2, order(slo_ms=40.0)).reason  # type: ignore[arg-type]
    inst.monitor.offered_rps = 20_000.0
    assert batch_delay_for(worker(None), inst, 32, order(slo_ms=40.0)).ms == pytest.approx(1.55)  # type: ignore[arg-type]
    inst.monitor.offered_rps = 1.0  # too rare to wait for
    assert batch_delay_for(worker(None), inst, 32, order(slo_ms=40.0)).ms == 0.0  # type: ignore[arg-type]
    assert batch_delay_for(worker(3.0), inst, 32, order(slo_ms=40.0)).ms == 3.0  # type: ignore[arg-type]
    assert inst.delay.ms == 3.0  # what the heartbeat reports is the latest choice
