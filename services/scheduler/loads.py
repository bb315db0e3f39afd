"""Query-path cold loads: the scheduler loads a variant itself only when selection found nothing placed
that can serve the query (INFaaS's "load" action), once however many queries ask at the same moment, and
at most once per `COLD_LOAD_EVERY_S` per model (per variant for a pinned query). The planner owns
capacity: a load the limit holds back is a shed query it counts as demand."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from infaas.clients.executor import ExecutorClient
from infaas.core.errors import Overloaded
from infaas.policy.selection import Decision
from services.scheduler import metrics
from services.scheduler.snapshot import SnapshotCache

COLD_LOAD_EVERY_S = 5.0
"""At most one query-path cold load per model per dispatcher in this time: selection loads only when
nothing placed can serve, so more would mean loads failing or instances vanishing; the planner, which
owns capacity, sees the shed queries meanwhile."""


class ColdLoads:
    def __init__(
        self,
        *,
        snapshot: SnapshotCache,
        executors: ExecutorClient,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.snapshot = snapshot
        self.executors = executors
        self.clock = clock
        self._loads: dict[str, asyncio.Future[None]] = {}  # variant → its load under way
        self._last: dict[str, float] = {}  # model (or pinned variant) → when it was last cold-loaded

    async def ensure(self, decision: Decision, *, pinned: bool = False, failover: bool = False) -> bool:
        """Load the chosen variant once even if many queries ask at the same moment; True if this call
        loaded it. Rate-limited per model; a pinned variant (nothing else may answer its query) per
        variant, so asking for one variant and then another is served, and alternating between them is
        not. A failover (the worker that held the instance was lost under the query) is never held back,
        nor is a load when nothing of the model serves anywhere (its instances died, or none was ever
        loaded): a load is then the only way to answer."""
        vid = decision.variant.id
        pending = self._loads.get(vid)
        if pending is not None:
            await asyncio.shield(pending)
            return False
        worker = decision.worker
        assert worker is not None
        model, now = decision.variant.model, self.clock()
        limited = vid if pinned else model
        last = self._last.get(limited)
        variants, serving = self.snapshot.snapshot.variants.values(), self.snapshot.serving
        alone = not any(serving.get(v.id) for v in variants if v.model == model)
        if not (failover or alone) and last is not None and now - last < COLD_LOAD_EVERY_S:
            metrics.SHED.labels("cold_load_limit").inc()
            raise Overloaded(
                f"model {model!r} was cold-loaded {now - last:.1f} s ago and nothing loaded can serve the "
                f"query; at most one query-path load per {COLD_LOAD_EVERY_S:g} s (the planner adds capacity)",
                variant=vid,
                retry_after_s=1,
            )
        self._last[limited] = now
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._loads[vid] = future
        try:
            await self.executors.load(worker.url, vid)
            self.snapshot.note_instance(worker.id, vid, "active")
            future.set_result(None)
            return True
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a load nobody else awaited must not log "never retrieved"
            raise
        finally:
            del self._loads[vid]
