"""Per-query metric updates added up in plain Python, written to prometheus_client in bulk.

In multiprocess mode (every service run by the launcher) each `inc` of a counter and each `observe` of
a histogram is a lock, a pid check, a struct pack and a write into a memory-mapped file — two of them
for a histogram. The query path made about ten of those per query in the gateway and as many in the
executor, a few µs each on these VMs (docs/benchmarks.md). Here an update is a dict entry; `flush`
writes one increment per child and per histogram bucket touched since the last one.

`flush` runs before every scrape of this process (`infaas.metrics.exposition.exposition`) and every
`every_s` in `run` (started by the services whose hot paths use the buffer), so another process's scrape
sees these values at most that late. Everything stays on the event loop's thread: no lock.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from infaas.core.aio import stop_tasks

log = logging.getLogger("infaas.metrics")


class MetricBuffer:
    def __init__(self) -> None:
        self._added: dict[Any, float] = {}
        self._observed: dict[Any, list[float]] = {}

    def inc(self, child: Any, amount: float = 1.0) -> None:
        """`child.inc(amount)`, later. `child`: a counter's label child (or a label-less counter)."""
        added = self._added
        added[child] = added.get(child, 0.0) + amount

    def observe(self, child: Any, value: float) -> None:
        """`child.observe(value)`, later. `child`: a histogram's label child (or a label-less one)."""
        found = self._observed.get(child)
        if found is None:
            self._observed[child] = [value]
        else:
            found.append(value)

    def flush(self) -> None:
        added, self._added = self._added, {}
        observed, self._observed = self._observed, {}
        for child, amount in added.items():
            child.inc(amount)
        for child, values in observed.items():
            observe_many(child, values)

    async def run(self, every_s: float = 0.5) -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                self.flush()
            except Exception:  # a metrics file gone (a test tearing down): never stop the loop for it
                log.exception("flushing metrics failed")


def observe_many(histogram: Any, values: list[float]) -> None:
    """What `observe` called once per value writes, with one write per bucket touched: prometheus_client
    keeps a histogram child's sum and non-cumulative bucket values in `_sum` and `_buckets`, one per upper
    bound in `_upper_bounds` (the last is +Inf). `tests/unit/kernel/test_metric_buffer.py` checks this against
    `observe` on the installed version."""
    histogram._raise_if_not_observable()
    bounds: list[float] = histogram._upper_bounds
    counts: dict[int, int] = {}
    for value in values:
        if value != value:  # NaN: `observe` adds it to the sum and to no bucket
            continue
        i = bisect.bisect_left(bounds, value)  # the first bound ≥ value, as `observe`'s `<=` scan
        counts[i] = counts.get(i, 0) + 1
    histogram._sum.inc(sum(values))
    for i, n in counts.items():
        histogram._buckets[i].inc(n)


BUFFER = MetricBuffer()


@asynccontextmanager
async def flushing(every_s: float = 0.5) -> AsyncIterator[None]:
    """Flush `BUFFER` every `every_s` while the block runs (a service's lifespan), and once at its end."""
    task = asyncio.create_task(BUFFER.run(every_s), name="metrics-flush")
    try:
        yield
    finally:
        await stop_tasks(task)
        BUFFER.flush()
