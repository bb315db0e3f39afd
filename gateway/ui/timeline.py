"""Load over the last minutes for the admin UI's load page: a bounded in-memory ring of points, one per
sampling interval, each the difference of two scrapes (`live.py`) plus the instances per variant the
workers reported, and the charts drawn from it (server-side SVG).

Each gateway process samples on its own (`LoadSampler`, every `ui_load_sample_s`), so the page has a
history as soon as it is opened; nothing survives a restart (the Grafana dashboard over Prometheus is
for longer spans). Points hold numbers only, never the scrapes: the ring's size is bounded by its
length, whatever the number of series.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from markupsafe import Markup

from gateway.ui import live
from gateway.ui.svg import Series, timeseries
from infaas.policy.selection import USABLE_STATES
from infaas.schemas.api import Worker

log = logging.getLogger("infaas.gateway.ui")

MAX_VARIANT_SERIES = 8


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One sampling interval: rates over it, latency quantiles of the queries in it."""

    at: float
    """Wall-clock time of the interval's end (s since the epoch)."""
    seconds: float
    queries_per_s: float
    p50_ms: float | None
    p99_ms: float | None
    """None when no query finished in the interval."""
    slo_missed_per_s: float
    shed_per_s: float
    instances: Mapping[str, int]
    """Variant → instances serving it (loading, active, overloaded or interfered) at the interval's end."""


def serving_instances(workers: Iterable[Worker]) -> dict[str, int]:
    """Instances per variant in a state that holds capacity (`USABLE_STATES`; failed ones do not) on
    the live workers, as the registry lists them."""
    out: dict[str, int] = {}
    for w in workers:
        if not w.live:
            continue
        for vid, state in w.instances.items():
            if state in USABLE_STATES:
                out[vid] = out.get(vid, 0) + 1
    return out


def point(
    cur: live.Samples, prev: live.Samples, *, at: float, seconds: float, instances: Mapping[str, int]
) -> LoadPoint:
    """The interval between two scrapes `seconds` apart as one point."""
    window = live.load(live.difference(cur, prev), seconds)
    return LoadPoint(
        at=at,
        seconds=seconds,
        queries_per_s=window.queries_per_s or 0.0,
        p50_ms=window.p50_ms,
        p99_ms=window.p99_ms,
        slo_missed_per_s=window.slo_missed / seconds,
        shed_per_s=window.shed / seconds,
        instances=dict(instances),
    )


class LoadRing:
    """The last `capacity` points; the previous scrape is kept only to difference the next against."""

    def __init__(self, capacity: int) -> None:
        self.points: deque[LoadPoint] = deque(maxlen=max(1, capacity))
        self._last: tuple[float, live.Samples] | None = None

    def add(
        self, *, at: float, monotonic: float, samples: live.Samples, instances: Mapping[str, int]
    ) -> None:
        """Record a scrape taken at `monotonic` (for the interval) and `at` (wall clock, for the axis)."""
        if self._last is not None and monotonic > self._last[0]:
            seconds = monotonic - self._last[0]
            self.points.append(point(samples, self._last[1], at=at, seconds=seconds, instances=instances))
        self._last = (monotonic, samples)


@dataclass(frozen=True)
class LoadCharts:
    throughput: Markup
    latency: Markup
    misses: Markup
    instances: Markup
    points: int
    span_s: float
    interval_s: float
    history_s: float

    @property
    def span_label(self) -> str:
        return f"{self.span_s / 60:.0f} min" if self.span_s >= 120 else f"{self.span_s:.0f} s"


def charts(points: Iterable[LoadPoint], now: float, *, interval_s: float, history_s: float) -> LoadCharts:
    """Four charts against seconds before `now`: queries/s; p50 and p99; SLO misses and shed per second;
    instances per variant (the variants with the most instances, at most `MAX_VARIANT_SERIES`)."""
    kept = list(points)
    ago = [p.at - now for p in kept]

    def series(name: str, values: Iterable[float | None]) -> Series:
        return Series(name, list(zip(ago, values, strict=True)))

    peak: dict[str, int] = {}
    for p in kept:
        for vid, n in p.instances.items():
            peak[vid] = max(peak.get(vid, 0), n)
    shown = sorted(peak, key=lambda vid: (-peak[vid], vid))[:MAX_VARIANT_SERIES]
    x_label = "seconds ago"
    # Every chart over the same span, so a spike lines up across them.
    x_span = (min(ago[0] - kept[0].seconds, -interval_s), 0.0) if kept else None
    return LoadCharts(
        throughput=timeseries(
            "queries per second",
            [series("queries/s", (p.queries_per_s for p in kept))],
            x_label=x_label,
            x_span=x_span,
            y_label="queries/s",
        ),
        latency=timeseries(
            "query latency at the gateway (p50, p99)",
            [series("p50", (p.p50_ms for p in kept)), series("p99", (p.p99_ms for p in kept))],
            x_label=x_label,
            x_span=x_span,
            y_label="ms",
        ),
        misses=timeseries(
            "SLO misses and shed queries per second",
            [
                series("SLO missed/s", (p.slo_missed_per_s for p in kept)),
                series("shed/s", (p.shed_per_s for p in kept)),
            ],
            x_label=x_label,
            x_span=x_span,
            y_label="queries/s",
        ),
        instances=timeseries(
            "instances per variant",
            [series(vid, (float(p.instances.get(vid, 0)) for p in kept)) for vid in shown],
            x_label=x_label,
            x_span=x_span,
            y_label="instances",
        ),
        points=len(kept),
        span_s=(kept[-1].at - kept[0].at + kept[0].seconds) if kept else 0.0,
        interval_s=interval_s,
        history_s=history_s,
    )


Scraper = Callable[[], Awaitable[live.Samples]]


class LoadSampler:
    """Feeds a `LoadRing` every `interval_s` from this gateway's scrape of the serving processes."""

    def __init__(
        self,
        *,
        instances: Callable[[], Awaitable[Mapping[str, int]]],
        scrape: Scraper,
        interval_s: float,
        history_s: float,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        on_stop: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.ring = LoadRing(int(history_s / interval_s) if interval_s > 0 else 1)
        self._on_stop = on_stop
        self.interval_s = interval_s
        self._instances = instances
        self._scrape = scrape
        self._clock = clock
        self._monotonic = monotonic
        self._task: asyncio.Task[None] | None = None

    async def sample(self) -> None:
        instances = await self._instances()
        samples = await self._scrape()
        self.ring.add(at=self._clock(), monotonic=self._monotonic(), samples=samples, instances=instances)

    async def _run(self) -> None:
        while True:
            try:
                await self.sample()
            except Exception as exc:  # the registry or a worker away: a gap in the charts, said in the log
                log.warning("load sample failed: %s", exc)
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        if self.interval_s > 0 and self._task is None:
            self._task = asyncio.create_task(self._run(), name="ui-load-sampler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._on_stop is not None:
            await self._on_stop()
