"""The cyclic garbage collector, settled once a process has started.

Every long-lived process of the suite calls `settle_heap` once its start-up is done: the services
behind HTTP (gateway, executor, scheduler, planner, registry) at the end of their lifespan's start, the
Celery workers (profiler, jobs) when the worker is ready. They share the serving cores, and a full
collection in any of them is 50–120 ms of CPU over a heap of imports (the planner, profiler and jobs
worker, measured idle under `tiny` at 50/s) that a query on that core waits behind, once per wake-up
it makes meanwhile. Only once: what is frozen is never collected, so freezing again after each task
would keep for good any cycle a later task drops.
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Call at the end of a service's start-up: move everything built so far (imports, routes, clients,
    and the long-lived containers such as the prediction cache's) out of the cyclic collector's reach.

    A full collection walks every tracked container, including every slot of a large dict; on the query
    path that stalled a gateway for 5–10 ms each time, every second or two under load. Frozen objects
    are never walked again, and what they hold stays alive through them as before (nothing they refer to
    is collected early: the collector counts their references as external). Measured in
    docs/benchmarks.md."""
    gc.collect()
    gc.freeze()
    # A young collection every 10,000 net allocations instead of 700: a query allocates hundreds of
    # objects, so at the default a collection ran every few queries, and caught (and promoted to older
    # generations, whose collections cost more) the objects of every query in flight at that moment.
    gc.set_threshold(10_000, 10, 10)
