"""Instance states and AIMD batching, driven by a hand-moved clock."""

from __future__ import annotations

from dataclasses import replace

import pytest

from infaas.schemas.variants import BatchLatency, VariantProfile
from services.executor.batching import AIMD
from services.executor.instance_state import InstanceMonitor, Status, Thresholds, Window, next_state
from tests.factories import variant_profile


def profile(saturation_qps: float = 1000.0) -> VariantProfile:
    # Latencies in the tens of ms, so the absolute-excess guard (0.5 ms) does not hide the ratios.
    return variant_profile(
        max_batch=8, latencies=((1, 10.0, 15.0), (8, 40.0, 50.0)), saturation_qps=saturation_qps
    )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_overload_enters_at_95_percent_and_leaves_below_80() -> None:
    clock = Clock()
    monitor = InstanceMonitor(profile(saturation_qps=1000), clock=clock, status=Status("active", ""))
    clock.now += 1.0
    monitor.offered(900)  # 90 %: still active
    assert monitor.tick().state == "active"
    clock.now += 1.0
    monitor.offered(960)  # 96 %: overloaded
    status = monitor.tick()
    assert status.state == "overloaded" and "96%" in status.reason
    clock.now += 2.0
    monitor.offered(1700)  # 85 %: inside the hysteresis band, stays overloaded
    assert monitor.tick().state == "overloaded"
    clock.now += 1.0
    monitor.offered(790)  # 79 %: back to active
    assert monitor.tick().state == "active"


def test_interference_enters_at_2_5x_and_leaves_at_1_5x() -> None:
    clock = Clock()
    monitor = InstanceMonitor(profile(), clock=clock, status=Status("active", ""))
    for compute_ms, expected in (
        (20.0, "active"),
        (26.0, "interfered"),
        (18.0, "interfered"),
        (14.0, "active"),
    ):
        clock.now += 1.0
        monitor.offered(1)
        monitor.ran(1, compute_ms)  # profiled p50 at batch 1 is 10 ms
        assert monitor.tick().state == expected, compute_ms
    # The slowdown is measured against the profile at the batch actually run (p50 40 ms at 8 rows).
    clock.now += 1.0
    monitor.ran(8, 90.0)
    assert monitor.tick().state == "active"
    clock.now += 1.0
    monitor.ran(8, 105.0)
    assert monitor.tick().state == "interfered"


def test_microsecond_noise_is_not_interference() -> None:
    clock = Clock()
    tiny = replace(profile(), latencies=(BatchLatency(1, 0.006, 0.01),), max_batch=1)
    fast = InstanceMonitor(tiny, clock=clock, status=Status("active", ""))
    clock.now += 1.0
    fast.ran(1, 0.05)  # 8× the profile, but only 44 µs slower: noise, not a neighbour
    assert fast.tick().state == "active"
    clock.now += 1.0
    fast.ran(1, 3.0)  # 3 ms for a 6 µs model: something is really in the way
    assert fast.tick().state == "interfered"


def test_idle_windows_keep_interference_and_clear_overload() -> None:
    p = profile()
    idle = Window(seconds=2.0, rows_offered=0, slowdowns=())
    assert next_state(Status("interfered", "slow"), idle, p).state == "interfered"
    assert next_state(Status("overloaded", "busy"), idle, p).state == "active"
    assert next_state(Status("loading", "loading"), idle, p).state == "loading"
    assert next_state(Status("failed", "boom"), Window(1.0, 10_000, (9.0,)), p).state == "failed"


def test_overload_wins_over_interference() -> None:
    busy_and_slow = Window(seconds=1.0, rows_offered=2000, slowdowns=(3.0, 3.0))
    assert next_state(Status("active", ""), busy_and_slow, profile()).state == "overloaded"


def test_thresholds_are_configurable() -> None:
    th = Thresholds(interfere_enter=1.2, interfere_exit=1.1)
    assert next_state(Status("active", ""), Window(1.0, 1, (1.3,)), profile(), th).state == "interfered"


def test_aimd_grows_additively_and_backs_off_by_ten_percent() -> None:
    aimd = AIMD(cap=64, step=4)
    assert aimd.limit() == 1
    aimd.observe(rows=1, latency_ms=1.0, budget_ms=20.0)
    assert aimd.limit() == 5
    aimd.observe(rows=2, latency_ms=1.0, budget_ms=20.0)  # did not fill the limit: no evidence, no growth
    assert aimd.limit() == 5
    aimd.observe(rows=5, latency_ms=25.0, budget_ms=20.0)
    assert aimd.size == pytest.approx(4.5)


def test_aimd_converges_below_the_budget() -> None:
    # A model whose batch of n rows takes 1 + 0.5·n ms, under a 20 ms budget: the largest batch that
    # fits is 38 rows. AIMD must settle into a band just under it and never sit above for long.
    aimd = AIMD(cap=64, step=2)
    limits = []
    for _ in range(300):
        n = aimd.limit()
        aimd.observe(rows=n, latency_ms=1 + 0.5 * n, budget_ms=20.0)
        limits.append(aimd.limit())
    tail = limits[-100:]
    assert max(tail) <= 40 and min(tail) >= 30
    assert sum(1 + 0.5 * n > 20 for n in tail) <= len(tail) // 3


def test_aimd_stays_within_one_and_the_cap() -> None:
    aimd = AIMD(cap=8, step=3)
    for _ in range(10):
        aimd.observe(rows=aimd.limit(), latency_ms=0.1, budget_ms=20.0)
    assert aimd.limit() == 8
    for _ in range(100):
        aimd.observe(rows=aimd.limit(), latency_ms=99.0, budget_ms=20.0)
    assert aimd.limit() == 1
