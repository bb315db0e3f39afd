"""The worker autoscaler loop (every `worker_autoscale_interval_s`): observe, decide with
`policies.worker_pool.plan`, carry out through a
`WorkerProvider`, record events with reasons.

Removing a worker never drops a query: it is first marked draining in Redis (the model autoscaler
stops placing instances on it), then drained — by the planner (`POST /v1/drain?exit=true`, the local
provider then waits for the process to exit) or by the worker itself (a Kubernetes preStop hook) — and
only then removed from the provider.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Literal

import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.data import store
from services.planner.event_log import EventLog
from services.planner.loops.cluster import DRAINING_KEY, ClusterReader
from services.planner.loops.leader import LeaderLock
from services.planner.loops.model_autoscaler import WorkerRequests
from services.planner.loops.observe import KnownWorkers
from services.planner.policies.worker_pool import WorkerConfig, WorkerDecision, WorkerSnapshot, plan
from services.planner.providers.base import WorkerProvider

log = logging.getLogger("infaas.planner")


class WorkerAutoscaler:
    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        lock: LeaderLock,
        provider: WorkerProvider,
        executors: ExecutorClient,
        events: EventLog,
        requests: WorkerRequests,
        config: WorkerConfig,
        heartbeat_ttl_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.redis = redis
        self.lock = lock
        self.provider = provider
        self.executors = executors
        self.events = events
        self.requests = requests
        self.config = config
        self.heartbeat_ttl_s = heartbeat_ttl_s
        self.clock = clock
        self.idle_since: dict[str, float] = {}
        self.removing: dict[str, asyncio.Task[None]] = {}
        self.known = KnownWorkers(heartbeat_ttl_s, clock())
        self.cluster = ClusterReader(ttl_s=heartbeat_ttl_s, rows=False, demand=False)

    async def tick(self) -> list[WorkerDecision]:
        if not await self.lock.hold():
            return []
        now = self.clock()
        try:
            read = await self.cluster.read(self.redis, now=now)
        except Exception:
            self.known.failed()
            raise
        workers, instances = read.workers, read.instances
        missing = self.known.missing_in(read.beats, now)
        if missing:
            # Redis lost workers that live (restarted empty): the pool would look short or idle. The
            # model autoscaler's hold event says so; nothing is added or drained until they heartbeat.
            return []
        self.removing = {w: t for w, t in self.removing.items() if not t.done()}
        asked = {kind: why for kind, (_, why) in self.requests.take().items()}
        snapshot = WorkerSnapshot(
            now=now,
            workers=workers,
            instances=instances,
            requests=asked,
            starting=await self.provider.starting(),
            draining=read.draining | frozenset(self.removing),
            # Only this provider's workers may go: never a worker another system started.
            removable=frozenset(w.id for w in workers if self.provider.owns(w)),
        )
        result = plan(snapshot, self.idle_since, self.config)
        self.idle_since = dict(result.idle_since)
        by_id = {w.id: w for w in workers}
        for d in result.decisions:
            if d.action == "add_worker":
                await self._add(d)
            elif d.worker is not None and d.worker in by_id and self.provider.owns(by_id[d.worker]):
                await self.redis.sadd(DRAINING_KEY, d.worker)
                await self._record(d, "decided")
                self.removing[d.worker] = asyncio.create_task(self._remove(d, by_id[d.worker].url))
        return list(result.decisions)

    async def settle(self) -> None:
        if self.removing:
            await asyncio.gather(*self.removing.values(), return_exceptions=True)

    async def _add(self, d: WorkerDecision) -> None:
        await self._record(d, "decided")
        try:
            started = await self.provider.add(d.hardware)
        except Exception as exc:
            await self._record(d, "failed", f"{self.provider.name} could not add one: {exc}")
            return
        await self._record(d, "done", f"{self.provider.name}: {started}")

    async def _remove(self, d: WorkerDecision, url: str) -> None:
        assert d.worker is not None
        workers, _ = await store.read_live(self.redis, now=self.clock(), ttl_s=self.heartbeat_ttl_s)
        view = next((w for w in workers if w.id == d.worker), None)
        try:
            drained = None
            if not self.provider.drains_itself:
                drained = await self.executors.drain_worker(url, exit=True)
            if view is not None:
                await self.provider.remove(view)
        except Exception as exc:
            await self._record(d, "failed", f"removing it failed: {exc}")
            return
        finally:
            await self.redis.srem(DRAINING_KEY, d.worker)
        await self._record(d, "done", f"drained and removed ({drained})" if drained else "removed")

    async def _record(
        self, d: WorkerDecision, outcome: Literal["decided", "done", "failed"], note: str = ""
    ) -> None:
        reason = f"{d.reason} — {note}" if note else d.reason
        try:
            await self.events.record(
                kind="worker_autoscaler",
                action=d.action,
                outcome=outcome,
                reason=reason,
                worker=d.worker,
                details={"hardware": d.hardware, "provider": self.provider.name},
            )
        except Exception as exc:
            log.warning("recording an event failed: %s (%s)", exc, reason)
        log.info("%s %s %s: %s", d.action, d.worker or d.hardware, outcome, reason)
