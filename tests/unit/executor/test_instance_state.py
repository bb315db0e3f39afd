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


def test_under_a_known_slo_overload_starts_where_serf_predicts_the_slo_mean() -> None:
    # SLO 100 ms: batches up to 8 fit its half (p99 50 ms). SERF (M/D/1 over batches): batch 8 in 40 ms
    # keeps a 100 ms mean up to ρ = 3/4 of its 200 rows/s, 150 rows/s; batch 1 (10 ms) only 94.7. The
    # profiled peak (1,000 rows/s) is far above either: without the SLO, 160 rows/s would be "16 %".
    clock = Clock()
    monitor = InstanceMonitor(profile(), clock=clock, status=Status("active", ""), slo_ms=100.0)
    for offered, expected in ((140, "active"), (160, "overloaded"), (130, "overloaded"), (110, "active")):
        clock.now += 1.0
        monitor.offered(offered)
        status = monitor.tick()
        assert status.state == expected, (offered, status.reason)
    clock.now += 1.0
    monitor.offered(160)
    status = monitor.tick()
    assert "107% of its capacity under the 100 ms SLO (150 rows/s at batch ~8)" in status.reason
    # ρ = 160/8/(1000/40) = 0.8: W = 40 + 0.8 · 40/(2 · 0.2) = 120 ms (Pollaczek–Khinchine)
    assert status.reason.endswith("SERF predicts a mean of 120.0 ms")
    # Kept 90 % busy by batches of 1 (the traffic forms no bigger ones): capacity is batch 1's, 94.7.
    clock.now += 1.0
    for _ in range(90):
        monitor.ran(1, 10.0)
    monitor.offered(120)
    status = monitor.tick()
    assert status.state == "overloaded" and "(95 rows/s at batch ~1)" in status.reason
    unknown = InstanceMonitor(profile(), clock=clock, status=Status("active", ""))
    clock.now += 1.0
    unknown.offered(160)
    assert unknown.tick().state == "active"  # no SLO said: 16 % of the profiled peak


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
    aimd.observe(rows=1, compute_ms=1.0, slo_ms=20.0)
    assert aimd.limit() == 5
    aimd.observe(rows=2, compute_ms=1.0, slo_ms=20.0)  # did not fill the limit: no evidence, no growth
    assert aimd.limit() == 5
    aimd.observe(rows=5, compute_ms=25.0, slo_ms=20.0)
    assert aimd.size == pytest.approx(4.5)


def test_aimd_converges_below_the_slo() -> None:
    # A model whose batch of n rows takes 1 + 0.5·n ms, under a 20 ms SLO: the largest batch that
    # fits is 38 rows. AIMD must settle into a band just under it and never sit above for long.
    aimd = AIMD(cap=64, step=2)
    limits = []
    for _ in range(300):
        n = aimd.limit()
        aimd.observe(rows=n, compute_ms=1 + 0.5 * n, slo_ms=20.0)
        limits.append(aimd.limit())
    tail = limits[-100:]
    assert max(tail) <= 40 and min(tail) >= 30
    assert sum(1 + 0.5 * n > 20 for n in tail) <= len(tail) // 3


def test_aimd_stays_within_one_and_the_cap() -> None:
    aimd = AIMD(cap=8, step=3)
    for _ in range(10):
        aimd.observe(rows=aimd.limit(), compute_ms=0.1, slo_ms=20.0)
    assert aimd.limit() == 8
    for _ in range(100):
        aimd.observe(rows=aimd.limit(), compute_ms=99.0, slo_ms=20.0)
    assert aimd.limit() == 1
