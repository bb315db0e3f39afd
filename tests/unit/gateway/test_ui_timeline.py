"""The load page's time series: a bounded ring of points differenced from scrapes, the sampler that
feeds it (clocks and sources injected, no network), and the SVG charts drawn from it."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime

import pytest

from gateway.ui import live, timeline
from gateway.ui.svg import Series, timeseries
from infaas.schemas.api import Worker
from tests.unit.gateway.test_ui_live import scrape_text

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def worker(wid: str, instances: dict[str, str], *, is_live: bool = True) -> Worker:
    return Worker(
        id=wid,
        hardware="cpu",
        url=f"http://{wid}",
        cores=2,
        memory_bytes=1 << 30,
        registered_at=NOW,
        last_seen_at=NOW,
        live=is_live,
        instances=instances,
    )


def scrape(ok: int, slow: int = 0, misses: int = 0) -> live.Samples:
    return live.parse(
        scrape_text(ok=ok, slow=slow, misses=misses, met=ok + slow - misses, rows=ok, batches=1)
    )


def test_instances_per_variant_count_serving_states_of_live_workers() -> None:
    workers = [
        worker("w1", {"m.a": "active", "m.b": "loading", "m.c": "failed"}),
        worker("w2", {"m.a": "overloaded"}),
        worker("gone", {"m.a": "active"}, is_live=False),
    ]
    assert timeline.serving_instances(workers) == {"m.a": 2, "m.b": 1}


def test_a_point_is_the_interval_between_two_scrapes() -> None:
    p = timeline.point(
        scrape(190, slow=10, misses=10), scrape(100), at=50.0, seconds=10.0, instances={"m.a": 1}
    )
    assert p.queries_per_s == pytest.approx(10.0)
    assert p.slo_missed_per_s == pytest.approx(1.0)
    assert p.p99_ms is not None and 50 < p.p99_ms <= 100
    assert p.instances == {"m.a": 1}
    idle = timeline.point(scrape(100), scrape(100), at=60.0, seconds=10.0, instances={})
    assert idle.queries_per_s == 0 and idle.p50_ms is None  # nothing finished: no latency to draw


def test_the_ring_is_bounded_and_needs_two_scrapes_for_a_point() -> None:
    ring = timeline.LoadRing(capacity=3)
    ring.add(at=0.0, monotonic=0.0, samples=scrape(0), instances={})
    assert not ring.points
    for i in range(1, 6):
        ring.add(at=5.0 * i, monotonic=5.0 * i, samples=scrape(10 * i), instances={"m.a": i})
    assert len(ring.points) == 3
    assert [p.at for p in ring.points] == [15.0, 20.0, 25.0]  # the oldest went
    assert all(p.queries_per_s == pytest.approx(2.0) for p in ring.points)


async def test_the_sampler_feeds_the_ring_from_its_sources_and_clocks() -> None:
    counts = iter([0, 50, 150])
    ticks = iter([100.0, 105.0, 110.0])
    asked: list[str] = []

    async def serving() -> dict[str, int]:
        asked.append("instances")
        return {"m.a": 1}

    async def samples() -> live.Samples:
        asked.append("scrape")
        return scrape(next(counts))

    clock = iter([1000.0, 1005.0, 1010.0])
    sampler = timeline.LoadSampler(
        instances=serving,
        scrape=samples,
        interval_s=5.0,
        history_s=600.0,
        clock=lambda: next(clock),
        monotonic=lambda: next(ticks),
    )
    assert sampler.ring.points.maxlen == 120  # 600 s at one point per 5 s
    for _ in range(3):
        await sampler.sample()
    assert asked == ["instances", "scrape"] * 3
    assert [p.queries_per_s for p in sampler.ring.points] == [pytest.approx(10.0), pytest.approx(20.0)]
    assert [p.instances for p in sampler.ring.points] == [{"m.a": 1}, {"m.a": 1}]


async def test_the_sampler_releases_what_it_kept_when_it_stops() -> None:
    # The gateway's sampler keeps one HTTP client for all its samples (a client per sample built an SSL
    # context on the query path's event loop every 5 s) and closes it when the sampler stops.
    closed: list[bool] = []

    async def nobody() -> dict[str, int]:
        return {}

    async def nothing() -> live.Samples:
        return scrape(0)

    async def close() -> None:
        closed.append(True)

    sampler = timeline.LoadSampler(
        instances=nobody, scrape=nothing, interval_s=5.0, history_s=60.0, on_stop=close
    )
    sampler.start()
    await asyncio.sleep(0)
    await sampler.stop()
    assert closed == [True]


def test_charts_draw_each_series_against_seconds_ago() -> None:
    points = [
        timeline.LoadPoint(
            at=1000.0 + 5 * i,
            seconds=5.0,
            queries_per_s=float(i),
            p50_ms=1.0 + i,
            p99_ms=None if i == 0 else 10.0 + i,
            slo_missed_per_s=0.0,
            shed_per_s=0.5 * i,
            instances={"m.a": 1, "m.b": i % 2},
        )
        for i in range(4)
    ]
    charts = timeline.charts(points, 1015.0, interval_s=5.0, history_s=600.0)
    assert charts.points == 4 and charts.span_s == pytest.approx(20.0) and charts.span_label == "20 s"
    assert charts.throughput.count('class="series"') == 1
    assert charts.latency.count('class="series"') == 2
    assert charts.latency.count("<title>p99:") == 3  # no mark where no query finished
    assert charts.misses.count('class="series"') == 2
    assert charts.instances.count('class="series"') == 2
    assert "<title>m.b: -5, 0</title>" in charts.instances  # 5 s ago, no instance of m.b
    assert "seconds ago" in charts.throughput
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", charts.throughput)  # nothing fetched


def test_charts_without_points_say_so() -> None:
    charts = timeline.charts([], 0.0, interval_s=5.0, history_s=600.0)
    assert charts.points == 0 and "no samples yet" in charts.throughput


def test_a_gap_breaks_the_line_and_every_chart_shares_the_span() -> None:
    drawn = timeseries(
        "t", [Series("p99", [(-20, 1.0), (-15, None), (-10, 3.0), (-5, 4.0)])], x_label="s", y_label="ms"
    )
    assert drawn.count('class="series"') == 2 and drawn.count('class="point"') == 3
    spanned = timeseries(
        "t", [Series("q", [(-200, 1.0), (-100, 2.0)])], x_label="s", y_label="q", x_span=(-300, 0)
    )
    # The axis spans the ring (to now), not only the points that have a value.
    assert ">-300</text>" in spanned and ">0</text>" in spanned
