"""Buffered metric updates come out exactly as the direct calls would have written them."""

from __future__ import annotations

import math
import random

from prometheus_client import CollectorRegistry, Counter, Histogram

from infaas.metrics.buffer import BUFFER as GLOBAL
from infaas.metrics.buffer import MetricBuffer, flushing
from tests.unit.virtual_time import VirtualTime

BUCKETS = (0.001, 0.005, 0.01, 0.1, 1.0)


def _pair(registry: CollectorRegistry, name: str) -> tuple[Histogram, Counter]:
    return (
        Histogram(f"{name}_seconds", "h", ["route"], buckets=BUCKETS, registry=registry),
        Counter(f"{name}_total", "c", ["route"], registry=registry),
    )


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample but the creation times (the two registries were made at different moments)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for metric in registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    }


def _same(
    a: dict[tuple[str, tuple[tuple[str, str], ...]], float],
    b: dict[tuple[str, tuple[tuple[str, str], ...]], float],
) -> bool:
    """Equal sample for sample; sums may differ in their last bits (added in another order)."""
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or math.isclose(a[k], b[k], rel_tol=1e-12) for k in a
    )


def test_flush_writes_what_direct_calls_write() -> None:
    direct, buffered = CollectorRegistry(), CollectorRegistry()
    h1, c1 = _pair(direct, "m")
    h2, c2 = _pair(buffered, "m")
    buffer = MetricBuffer()
    rng = random.Random(3)
    # values on bucket bounds too (`le` is inclusive), above the last bound, zero, negative and NaN
    values = [rng.choice([0.0, -1.0, *BUCKETS, 5.0, rng.random() * 2]) for _ in range(2000)]
    values[7] = math.nan  # in route "a": its sum is NaN either way, and no bucket counts it
    for i, value in enumerate(values):
        route = "a" if i % 3 else "b"
        h1.labels(route).observe(value)
        c1.labels(route).inc(i % 5)
        buffer.observe(h2.labels(route), value)
        buffer.inc(c2.labels(route), i % 5)
        if i == 1000:
            buffer.flush()  # several flushes add up
    assert not _same(_samples(buffered), _samples(direct))  # the rest is not written yet
    buffer.flush()
    assert _same(_samples(buffered), _samples(direct))
    buffer.flush()  # nothing new: nothing written twice
    assert _same(_samples(buffered), _samples(direct))


async def test_flushing_writes_periodically_and_at_the_end(virtual_time: VirtualTime) -> None:
    registry = CollectorRegistry()
    counter = Counter("periodic_total", "c", registry=registry)

    def value() -> float | None:
        return registry.get_sample_value("periodic_total")

    async with flushing(every_s=0.05):
        GLOBAL.inc(counter, 2)
        assert value() == 0.0
        await virtual_time.advance(0.04)
        assert value() == 0.0  # not flushed before its period
        await virtual_time.advance(0.02)
        assert value() == 2.0  # flushed at 0.05, with no write of the test's
        GLOBAL.inc(counter)
    assert value() == 3.0  # and once more at the end of the block
