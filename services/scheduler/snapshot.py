"""The scheduler's local, always-fresh view of the metadata store.

Variants change rarely (a model finishes profiling): they are reloaded when the registry publishes an
invalidation, and when the registry's publication token changes (a republication after Redis lost its
data: the invalidation may have been missed while the subscription was down). Workers and instances
change often: they are re-read every `interval` and whenever an executor announces a change; a worker
whose heartbeat vanished is kept for a while (`liveness.py`), and one declared failed leaves at once
(`drop_failed`). The planner's failover marks (`failover_marks.py`) are re-read when it announces a change,
and every `FAILOVER_RECHECK_S` in case an announcement was missed. A query then decides from memory, with
no Redis round trip.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace

import redis.asyncio as aioredis

from infaas.core.aio import stop_tasks
from infaas.data import failover_marks, store
from infaas.policy.selection import USABLE_STATES, CandidateIndex, InstanceView, Snapshot, WorkerView
from infaas.schemas.variants import VariantProfile
from services.scheduler import liveness
from services.scheduler.failover_marks import FailoverMarks

log = logging.getLogger("infaas.scheduler")

FAILOVER_RECHECK_S = 5.0

QUEUEING_STATES = USABLE_STATES - {"active"}
"""Instance states selection queues a query for (`infaas.policy.selection`); the executor takes a
pushed query for them too (a loading instance serves it once loaded)."""


class SnapshotCache:
    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        ttl_s: float,
        interval_s: float = 0.5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self.interval_s = interval_s
        self.clock = clock
        self.snapshot = Snapshot()
        self.by_model: dict[str, CandidateIndex] = {}
        self.by_app_signature: dict[tuple[str, str, str], CandidateIndex] = {}
        """Per (app, input signature key, task), the variants a model-less query may run: an app's
        classifier and regression model with the same inputs never answer each other's queries."""
        self._pinned: dict[str, CandidateIndex] = {}
        self.parity: dict[str, VariantProfile] = {}
        """Per model, its published parity model (hidden from selection; services/scheduler/parity.py)."""
        self.serving: dict[str, tuple[WorkerView, ...]] = {}
        """Per variant, the workers with an active instance of it that take pushed queries."""
        self.queueing: dict[str, tuple[WorkerView, ...]] = {}
        """Per variant, the workers that take pushed queries for an instance of it that is overloaded or
        interfered, else loading: where a query selection queued for such an instance is pushed."""
        self._unreachable: dict[str, float] = {}  # push address -> until when it is left out
        self._known: dict[str, liveness.Seen] = {}
        self._reachable_since = time.monotonic()  # when Redis last began answering (liveness.merge)
        self._failing = False
        self._published: str | None = None  # the registry's publication token last seen
        self._live_ids: tuple[str, ...] = ()  # the workers the last poll found live: read with the list
        self.failovers = FailoverMarks()
        self._task: asyncio.Task[None] | None = None

    async def refresh_variants(self) -> None:
        lost = self._published is not None and await self.redis.get(store.PUBLISHED) is None
        variants = await store.read_variants(self.redis)
        self.parity = await store.read_parity_variants(self.redis)
        if lost:
            # Redis lost the registry's publication (it republishes within a second or two): what it
            # holds now is a part at best, so keep what was known and add to it until then.
            log.warning("the metadata store lost the registry's publication; keeping the known variants")
            variants = {**self.snapshot.variants, **variants}
        by_model: dict[str, list[VariantProfile]] = {}
        by_app: dict[tuple[str, str, str], list[VariantProfile]] = {}
        for v in variants.values():
            by_model.setdefault(v.model, []).append(v)
            by_app.setdefault((v.app, v.signature_key, v.task), []).append(v)
        # Candidate arrays are built here, once per change, so a query decides without building anything.
        self.by_model = {k: CandidateIndex(v) for k, v in by_model.items()}
        self.by_app_signature = {k: CandidateIndex(v) for k, v in by_app.items()}
        self._pinned = {}
        self.snapshot = replace(self.snapshot, variants=variants)

    def pinned(self, model: CandidateIndex, variant_id: str) -> CandidateIndex | None:
        """A one-variant index for queries that pin a variant, built once per variants refresh."""
        index = self._pinned.get(variant_id)
        if index is None:
            chosen = [v for v in model.variants if v.id == variant_id]
            if not chosen:
                return None
            index = self._pinned[variant_id] = CandidateIndex(chosen)
        return index

    async def refresh_live(self) -> None:
        try:
            state = await store.read_live_state(
                self.redis, now=self.clock(), ttl_s=self.ttl_s, expect=self._live_ids
            )
        except Exception:
            self._failing = True  # the time until Redis answers again does not count against workers
            raise
        self._live_ids = state.ids
        now = time.monotonic()
        if self._failing:
            self._failing = False
            self._reachable_since = now
            log.info("Redis answers again: known workers have %.1f s to heartbeat", self.ttl_s)
        table = liveness.merge(
            self._known,
            state.workers,
            state.instances,
            departed=state.departed,
            now=now,
            reachable_since=self._reachable_since,
            ttl_s=self.ttl_s,
        )
        for wid in table.dropped:
            why = "it left" if wid in state.departed else f"no heartbeat for {self.ttl_s:.1f} s"
            log.info("worker %s is gone: %s", wid, why)
        self._known = table.workers
        if self._unreachable:
            self._unreachable = {a: t for a, t in self._unreachable.items() if t > now}
        self._set_live(*self._reachable(*liveness.flatten(table.workers)))
        if state.published is not None and state.published != self._published:
            self._published = state.published  # a (re)publication: read the variants it holds
            await self.refresh_variants()

    def _reachable(
        self, workers: tuple[WorkerView, ...], instances: tuple[InstanceView, ...]
    ) -> tuple[tuple[WorkerView, ...], tuple[InstanceView, ...]]:
        """`workers` and `instances` without the workers whose push address is left out."""
        gone = {w.id for w in workers if w.push in self._unreachable}
        if not gone:
            return workers, instances
        return tuple(w for w in workers if w.id not in gone), tuple(
            i for i in instances if i.worker_id not in gone
        )

    def _set_live(self, workers: tuple[WorkerView, ...], instances: tuple[InstanceView, ...]) -> None:
        self.snapshot = replace(self.snapshot, workers=workers, instances=instances)
        by_id = {w.id: w for w in workers if w.push}
        serving: dict[str, list[WorkerView]] = {}
        queueing: dict[str, list[WorkerView]] = {}
        loading: dict[str, list[WorkerView]] = {}
        for i in instances:
            worker = by_id.get(i.worker_id)
            if worker is None:
                continue
            if i.state == "active":
                serving.setdefault(i.variant_id, []).append(worker)
            elif i.state == "loading":
                loading.setdefault(i.variant_id, []).append(worker)
            elif i.state in QUEUEING_STATES:
                queueing.setdefault(i.variant_id, []).append(worker)
        self.serving = {vid: tuple(ws) for vid, ws in serving.items()}
        # An instance that already runs (overloaded, interfered) before one still loading: the query
        # would wait out the load there.
        self.queueing = {
            vid: tuple(queueing.get(vid) or loading[vid]) for vid in queueing.keys() | loading.keys()
        }

    def note_instance(self, worker_id: str, variant_id: str, state: str | None) -> None:
        """Record an instance this process just loaded (or, with `state` None, found gone), before the
        next heartbeat shows it."""
        kept = tuple(
            i
            for i in self.snapshot.instances
            if not (i.worker_id == worker_id and i.variant_id == variant_id)
        )
        if state is not None:
            new = InstanceView(worker_id=worker_id, variant_id=variant_id, state=state)  # type: ignore[arg-type]
            kept = (*kept, new)
        self._set_live(self.snapshot.workers, kept)

    def note_unreachable(self, push_addr: str) -> None:
        """A worker whose push connection failed or dropped: leave it out, its instances included, until
        its heartbeat would have expired anyway (a restarted executor listens on a new address)."""
        self._unreachable[push_addr] = time.monotonic() + self.ttl_s
        self._set_live(*self._reachable(self.snapshot.workers, self.snapshot.instances))

    def drop_failed(self, worker_id: str) -> tuple[WorkerView | None, frozenset[str]]:
        """A worker declared failed (`infaas.data.failures`) leaves the snapshot now; the store already
        lists it as gone, so the next read does not bring it back. Returns it (None if unknown here)
        and the variants it had instances of."""
        seen = self._known.pop(worker_id, None)
        snap = self.snapshot
        worker = next((w for w in snap.workers if w.id == worker_id), seen.worker if seen else None)
        vids = frozenset(i.variant_id for i in snap.instances if i.worker_id == worker_id)
        if seen is not None:
            vids |= {i.variant_id for i in seen.instances}
        self._set_live(
            tuple(w for w in snap.workers if w.id != worker_id),
            tuple(i for i in snap.instances if i.worker_id != worker_id),
        )
        return worker, vids

    async def start(self) -> None:
        await self.refresh_variants()
        await self.refresh_live()
        await self.failovers.refresh(self.redis)
        self._task = asyncio.create_task(self._poll(), name="snapshot-poll")

    async def _poll(self) -> None:
        recheck_at = time.monotonic() + FAILOVER_RECHECK_S
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.refresh_live()
            except Exception as exc:  # Redis briefly away: keep the last snapshot
                log.warning("snapshot refresh failed: %s", exc)
            if time.monotonic() >= recheck_at:
                recheck_at = time.monotonic() + FAILOVER_RECHECK_S
                await self.failovers.refresh(self.redis)

    async def on_invalidate(self, what: str) -> None:
        if what == "variants":
            await self.refresh_variants()
        elif what == failover_marks.CHANGED:
            await self.failovers.refresh(self.redis)
        else:
            await self.refresh_live()

    async def on_resubscribed(self) -> None:
        """The invalidation subscription was lost and is back: what it announced meanwhile was missed."""
        await self.refresh_variants()
        await self.failovers.refresh(self.redis)

    async def stop(self) -> None:
        await stop_tasks(self._task)
