"""The failover loop (FailLite): keeps warm backups for critical apps, and fails apps over when a
worker fails.

- Failures arrive as `FailureNotice`s on `infaas:failures` (whoever detects one first publishes it); as a
  fallback, a worker that was live at the last tick and is not now is declared failed ("left the
  snapshot") through `declare_failure`, as any detector does, which a worker that left on purpose is not.
  A notice this loop did not hear (its subscription lost, taken again) is found with the declaration
  (`declared_notices`): at once on subscribing again, else when the worker leaves the snapshot.
  Only the leader acts on notices; each failover done is marked in Redis (`mark_failed_over`), and a
  planner taking the lead fails over every declared worker not marked (`all_declared`): one
  declared while no planner led, or whose leader died before failing it over.
  Each (worker, incarnation) is handled once.
- On a failure, per app that the worker served: still served elsewhere → nothing to do; served by its warm
  backup → the backup is now its primary (warm failover); else it is failed over progressively
  (`policies/failover.py`, Algorithm 1; carried out by `failover_recovery.py`): its smallest variant
  loads first, then the chosen one, which replaces it. Answers from a variant other than the failed one
  carry `failover` (`failover_marks`).
- Every tick (`failover_interval_s`, leader only): warm backups re-planned by the proactive ILP
  (`policies/backups.py`; kept by `failover_backups.WarmBackups`), loads of new ones, unloads of those
  no longer planned, and marks cleared once the failed variant serves again.
Each step is an event (kind `failover`) with its reason. Backups are kept out of the model autoscaler's
view (`ModelAutoscaler.reserved`), and the models being failed over out of its plans (`busy`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson
import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.data import failover_marks, store
from infaas.data.failures import (
    FAILURES_CHANNEL,
    FailureNotice,
    all_declared,
    declare_failure,
    declared_notices,
    mark_failed_over,
    not_failed_over,
)
from infaas.data.subscription import keep_subscribed
from infaas.policy.failure_detection import unseen_for_ttl
from infaas.policy.selection import USABLE_STATES
from services.planner.event_log import EventLog
from services.planner.loops.cluster import ClusterReader
from services.planner.loops.failover_backups import View, WarmBackups
from services.planner.loops.failover_recovery import recover
from services.planner.loops.leader import LeaderLock
from services.planner.loops.model_autoscaler import ModelAutoscaler
from services.planner.loops.observe import LoadMeter
from services.planner.policies import backups as policy
from services.planner.policies.failover import Recovery, progressive

log = logging.getLogger("infaas.planner")


class Failover:
    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        lock: LeaderLock,
        registry: AsyncRegistryClient,
        executors: ExecutorClient,
        events: EventLog,
        heartbeat_ttl_s: float,
        alpha: float = policy.ALPHA,
        scaler: ModelAutoscaler | None = None,
        clock: Callable[[], float] = time.time,
        terms_ttl_s: float = 5.0,
    ) -> None:
        self.redis, self.lock = redis, lock
        self.executors, self.events, self.scaler, self.clock = executors, events, scaler, clock
        self.heartbeat_ttl_s = heartbeat_ttl_s
        self.warm = WarmBackups(
            redis=redis, registry=registry, executors=executors, event=self._event, alpha=alpha,
            scaler=scaler, terms_ttl_s=terms_ttl_s,
        )  # fmt: skip
        self.meter = LoadMeter()
        self.cluster = ClusterReader(ttl_s=heartbeat_ttl_s, rows=False, marks=True)  # one round trip a look
        self.known: dict[str, set[str]] = {}  # worker → variants, as of the last look
        self.handled: set[tuple[str, str]] = set()
        self.incarnations: dict[str, str] = {}  # worker → its incarnation, as of the last look
        self.unfinished: dict[tuple[str, str], FailureNotice] = {}  # failovers an error stopped: retried
        self.down: set[str] = set()  # workers handled as failed and not seen live since
        self.heartbeat_at: dict[str, float] = {}  # worker → its last heartbeat this loop saw (wall clock)
        self.reachable_since = 0.0  # when this loop's reads last came back after failing (wall clock)
        self.leads_seen = 0  # the lock's `terms` as of the last tick: a tick that finds it moved takes over
        self._failing = False
        self.tasks: set[asyncio.Task[None]] = set()  # recoveries under way
        self.marking: set[asyncio.Task[None]] = set()  # failovers to mark once their recoveries end
        self.lock_failover = asyncio.Lock()  # one failure handled at a time: each plans over the last's
        self.failovers = 0  # failovers begun, ever: a tick's first read is stale once this moved

    # --- observing -------------------------------------------------------------------------------

    async def _view(self, *, without: str | None = None) -> View:
        read = await self.cluster.read(self.redis, now=self.clock())
        workers, instances = read.workers, read.instances
        if without is not None:
            workers = tuple(w for w in workers if w.id != without)
            instances = tuple(i for i in instances if i.worker_id != without)
        demand = self.meter.demand_of(read.demand)
        return View(
            read.now, read.variants, workers, instances, read.draining, demand, read.beats, read.marks
        )

    # --- failures --------------------------------------------------------------------------------

    async def listen(self, ready: asyncio.Event | None = None) -> None:
        """Act on every failure notice published on `infaas:failures`, for as long as this runs: the
        subscription is taken again after a loss, and what was declared meanwhile is caught up."""

        async def subscribed(n: int) -> None:
            if ready is not None:
                ready.set()
            if n > 1:
                await self._catch_up("its notice published while this planner's subscription was lost")

        await keep_subscribed(
            self.redis, [FAILURES_CHANNEL], self._on_notice, what="failover", on_subscribed=subscribed
        )

    async def _on_notice(self, _channel: bytes, data: bytes) -> None:
        try:
            notice = FailureNotice.decode(data)
            if await self.lock.hold():
                await self.fail_over(notice)
        except Exception:
            log.exception("failing over after %r failed", data)

    async def _catch_up(self, why: str, workers: set[str] | None = None) -> None:
        """Fail over what was declared failed without this loop hearing the notice: each worker last
        seen live (or those of `workers`), its declaration newer than its last heartbeat here — a false
        alarm's worker heartbeats after it, and its claim is cleared besides."""
        seen = {w: inc for w, inc in self.incarnations.items() if workers is None or w in workers}
        if not seen or not await self.lock.hold():
            return
        await self._fail_over_late(await declared_notices(self.redis, seen), why)

    async def _fail_over_late(
        self, notices: list[FailureNotice], why: str, beats: dict[str, float] | None = None
    ) -> None:
        """Fail over each of `notices` that neither this loop handled nor another planner failed over,
        unless its worker heartbeat after the declaration (here, or in `beats`): a false alarm's
        worker, or one restarted since."""
        for notice in await not_failed_over(self.redis, notices):
            key = (notice.worker, notice.incarnation)
            last = max(self.heartbeat_at.get(notice.worker, 0.0), (beats or {}).get(notice.worker, 0.0))
            if key in self.handled or notice.detected_at <= last:
                continue
            log.warning("failing over %s late: %s", notice.worker, why)
            try:
                await self.fail_over(notice, late=why)
            except Exception as exc:  # an event, and `unfinished` for the next tick: the others go on
                log.warning("failing over %s stopped: %s", notice.worker, exc)

    async def fail_over(self, notice: FailureNotice, *, late: str = "") -> None:
        """Fail over what `notice.worker` served, once per (worker, incarnation); `late` says why the
        notice is acted on only now, in the events."""
        key = (notice.worker, notice.incarnation)
        if key in self.handled:
            return
        self.handled.add(key)
        self.down.add(notice.worker)
        self.failovers += 1
        async with self.lock_failover:
            # What it served as of the last look, kept with the notice: a retry finds it no longer in
            # `known`.
            served = set(notice.instances) | self.known.pop(notice.worker, set())
            notice = replace(notice, instances=tuple(sorted(served)))
            before = set(self.tasks)
            try:
                await self._fail_over(notice, late)
            except Exception as exc:  # Redis or the registry away: what it did not reach is tried again
                self.handled.discard(key)
                self.unfinished[key] = notice
                why = f"{notice.worker} failed ({notice.reason}); failing over stopped: {exc}"
                await self._event("failover", "failed", f"{why}; tried again at the next tick", "")
                raise
            recovering = self.tasks - before
        if not recovering:
            await self._mark(notice, recovering)
            return
        # Marked once its recoveries have ended: should this planner die while they load, the one
        # taking the lead fails it over again (over what was loaded by then).
        marking = asyncio.create_task(self._mark(notice, recovering), name=f"failed-over:{notice.worker}")
        self.marking.add(marking)
        marking.add_done_callback(self.marking.discard)

    async def _mark(self, notice: FailureNotice, recovering: set[asyncio.Task[None]]) -> None:
        ended = await asyncio.gather(*recovering, return_exceptions=True)
        if any(isinstance(e, asyncio.CancelledError) for e in ended):
            return  # stopped with this planner: left to the next leader
        try:
            await mark_failed_over(self.redis, notice, self.lock.owner)
        except Exception as exc:  # a planner taking the lead meanwhile would look at it again
            log.warning("marking %s failed over failed: %s", notice.worker, exc)

    async def _fail_over(self, notice: FailureNotice, late: str = "") -> None:
        view = await self._view(without=notice.worker)
        lost = set(notice.instances)
        await self.warm.lost_with(notice.worker)
        families = await self.warm.families(view)
        cold: list[policy.Family] = []
        serving = {(i.variant_id, i.worker_id) for i in view.instances if i.state in USABLE_STATES}
        why = f"{notice.worker} failed ({notice.reason}, declared by {notice.detector})"
        if late:
            why += f"; acted on late: {late}"
        for family in families:
            failed = sorted(lost & family.members)
            if not failed:
                continue
            backup = self.warm.backups.get(family.app)
            if backup is not None and backup in serving:
                await self.warm.promote(family.app)
                reason = f"{why}: now served by its warm backup {backup[0]} on {backup[1]}"
                if backup[0] not in failed:
                    await failover_marks.mark(
                        self.redis, backup[0], failed=failed[0], app=family.app, reason=reason, since=view.now
                    )
                await self._event("warm_failover", "done", reason, family.app, backup[0], backup[1])
            elif family.primaries:
                where = ", ".join(sorted(family.primaries))
                await self._event("still_served", "done", f"{why}: still served on {where}", family.app)
            else:
                cold.append(family)
        if not cold:
            return
        plan = progressive(
            cold, policy.rooms(view.workers, view.instances, view.variants, draining=view.draining)
        )
        failed_of = {f.app: sorted(lost & f.members) for f in cold}
        for app, reason in plan.unrecovered.items():
            await self._event("progressive_failover", "failed", f"{why}: not recovered: {reason}", app)
        for recovery in plan.recoveries:
            await self._event(
                "progressive_failover", "decided", f"{why}: {recovery.reason}", recovery.app,
                recovery.target[0], recovery.target[1], delta=round(plan.delta, 4),
                first=list(recovery.first) if recovery.first else None,
            )  # fmt: skip
            models = {view.variants[v].model for v in (recovery.target[0], *(recovery.first or ())[:1])}
            failed_vid = (failed_of.get(recovery.app) or [recovery.target[0]])[0]
            task = asyncio.create_task(
                self._recover(recovery, failed_vid, view, why), name=f"failover:{recovery.app}"
            )
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            if self.scaler is not None:
                for model in models:
                    self.scaler.busy[model] = task

    async def _recover(self, recovery: Recovery, failed: str, view: View, why: str) -> None:
        await recover(
            recovery, failed, view, why,
            redis=self.redis, executors=self.executors, event=self._event, read_view=self._view,
        )  # fmt: skip

    # --- every tick: the snapshot fallback, warm backups, marks ------------------------------------

    async def tick(self) -> None:
        try:
            if not await self.lock.hold():
                return
            begun = self.failovers
            view = await self._view()
        except Exception:
            self._failing = True  # the time until Redis answers again does not count against workers
            raise
        if self._failing:
            self._failing, self.reachable_since = False, view.now
        for worker, at in view.beats.items():
            if at >= view.now - self.heartbeat_ttl_s:
                self.heartbeat_at[worker] = at
        if self.leads_seen != self.lock.terms:  # the lead taken: what no planner failed over is ours
            taken = "its notice acted on by no planner (found on taking the lead)"
            await self._fail_over_late(await all_declared(self.redis), taken, view.beats)
            self.leads_seen = self.lock.terms
        live = {w.id for w in view.workers}
        gone_now = sorted(
            w
            for w in set(self.known) - live - self.down
            if unseen_for_ttl(
                self.heartbeat_at.get(w, 0.0), self.reachable_since, view.now, self.heartbeat_ttl_s
            )
        )
        unheard: set[str] = set()
        for gone in gone_now:
            # Declared like any detector does (once per incarnation, not for a worker that left on
            # purpose), so that every scheduler drops it too; the notice comes back through `listen`.
            self.down.add(gone)
            notice = FailureNotice(
                worker=gone,
                reason="left the planner's snapshot (heartbeat expired)",
                detected_at=view.now,
                last_seen_at=view.now - self.heartbeat_ttl_s,
                detector="planner",
                instances=tuple(sorted(self.known.get(gone, ()))),
            )
            if await declare_failure(self.redis, notice) is None:
                log.info("%s left the snapshot: already declared, or it left on purpose", gone)
                unheard.add(gone)
        if unheard:  # declared by another detector, and its notice never reached `listen`?
            await self._catch_up("its notice not heard (found with the declaration)", unheard)
        for key, notice in list(self.unfinished.items()):
            del self.unfinished[key]
            # Not when it is back (a restart: what it served is the autoscaler's again), nor when a
            # notice heard since has failed it over.
            if notice.worker not in live and key not in self.handled:
                await self.fail_over(notice)
        if gone_now or self.tasks:  # a failover is due or under way: plan backups over what it leaves
            return
        async with self.lock_failover:  # never beside a failover: it promotes the backups it finds
            if self.failovers != begun:  # one began since the read above: plan over what it leaves
                view = await self._view()
            self.known = {}
            for i in view.instances:
                self.known.setdefault(i.worker_id, set()).add(i.variant_id)
            for w in view.workers:
                self.known.setdefault(w.id, set())
            self.incarnations = {w.id: w.incarnation for w in view.workers if w.incarnation}
            # Seen live again (a restart, or a detector's false alarm): a later failure is a new one.
            self.down -= set(self.known)
            self.heartbeat_at = {w: at for w, at in self.heartbeat_at.items() if w in self.known}
            self.handled = {(w, inc) for w, inc in self.handled if w not in self.known}
            await self.warm.plan(view)
            await self._clear_marks(view)

    async def _clear_marks(self, view: View) -> None:
        raw = view.marks  # read with the view, in its round trip
        active = {i.variant_id for i in view.instances if i.state == "active"}
        hosted = {i.variant_id for i in view.instances}
        for key, value in raw.items():
            vid = store.text(key)
            failed = str(orjson.loads(value).get("from", ""))
            if failed in active or vid not in hosted:
                await failover_marks.unmark(self.redis, vid)

    async def settle(self) -> None:
        if self.tasks or self.marking:
            await asyncio.gather(*self.tasks, *self.marking, return_exceptions=True)

    async def _event(
        self, action: str, outcome: Any, reason: str, app: str,
        variant: str | None = None, worker: str | None = None, **details: object,
    ) -> None:  # fmt: skip
        try:
            await self.events.record(
                kind="failover", action=action, outcome=outcome, reason=reason, variant=variant,
                worker=worker, details={"app": app, **details},
            )  # fmt: skip
        except Exception as exc:  # the database briefly away must not stop a failover
            log.warning("recording an event failed: %s (%s)", exc, reason)
        log.info("failover %s %s %s: %s", action, app, outcome, reason)
