"""The failover loop's warm backups (FailLite's proactive part): what each tick plans, and what a
failure takes away or promotes. The loop itself (`loops/failover.py`) decides when; this module keeps
the backups, the apps' terms they are planned under, and their copy in Redis (`BACKUPS_KEY`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import orjson
import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.data import store
from infaas.data.registry_version import Read, read_version, reread
from infaas.policy.selection import InstanceView, WorkerView
from infaas.schemas.variants import VariantProfile
from services.planner.loops.model_autoscaler import ModelAutoscaler
from services.planner.loops.observe import Demand
from services.planner.policies import backups as policy

log = logging.getLogger("infaas.planner")

BACKUPS_KEY = store.P + "planner:backups"
"""hash: app → JSON [variant, worker] of its warm backup (the planner's, rebuilt by the next plan)."""


@dataclass(frozen=True)
class View:
    """What the failover loop plans over: one read of the cluster (`ClusterReader`)."""

    now: float
    variants: dict[str, VariantProfile]
    workers: tuple[WorkerView, ...]
    instances: tuple[InstanceView, ...]
    draining: frozenset[str]
    demand: dict[str, Demand]
    beats: dict[str, float]  # every worker the heartbeat index lists -> its last heartbeat
    marks: dict[bytes, bytes]  # the failover marks as stored (`failover_marks.SERVING_KEY`)


Event = Callable[..., Awaitable[None]]
"""Records a `failover` event: (action, outcome, reason, app, variant=None, worker=None, **details)."""


class WarmBackups:
    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        registry: AsyncRegistryClient,
        executors: ExecutorClient,
        event: Event,
        alpha: float = policy.ALPHA,
        scaler: ModelAutoscaler | None = None,
        terms_ttl_s: float = 5.0,
    ) -> None:
        self.redis, self.registry, self.executors, self.event = redis, registry, executors, event
        self.alpha, self.scaler, self.terms_ttl_s = alpha, scaler, terms_ttl_s
        self.backups: dict[str, tuple[str, str]] = {}  # app → (variant, worker)
        self.terms: dict[str, Read[policy.AppTerms]] = {}

    # --- the apps' terms, and the families they make ---------------------------------------------

    async def families(self, view: View) -> list[policy.Family]:
        terms = await self._terms({v.app for v in view.variants.values()})
        rates = {m: d.rows_qps for m, d in view.demand.items()}
        return policy.families(
            view.variants.values(), view.instances, terms, rates, backups=self.backups.values()
        )

    async def _terms(self, apps: set[str]) -> dict[str, policy.AppTerms]:
        """Each app's terms, looked at every `terms_ttl_s`: renewed on an unchanged registry version
        token (`reread`), read from the registry otherwise."""
        now = time.monotonic()
        for app in apps:
            hit = self.terms.get(app)
            if hit is None or now - hit.checked_at > self.terms_ttl_s:
                try:
                    hit = await reread(hit, partial(self._read_terms, app), token=self._token, now=now)
                except Exception as exc:  # registry away: plan on what was read last
                    log.warning("reading app %s failed: %s", app, exc)
                    hit = Read(hit.value if hit is not None else policy.AppTerms(), None, now, now)
                self.terms[app] = hit
        return {app: self.terms[app].value for app in apps}

    async def _read_terms(self, app: str) -> policy.AppTerms:
        info = await self.registry.app(app)
        return policy.AppTerms(
            critical=info.criticality == "critical",
            lossy=info.lossy,
            min_accuracy=info.default_min_accuracy,
            slo_ms=info.default_latency_ms,
        )

    async def _token(self) -> str | None:
        return await read_version(self.redis)

    # --- what a failure does to them -------------------------------------------------------------

    async def lost_with(self, worker: str) -> None:
        """Forget the backups that were on failed `worker`: the next plan places them anew."""
        for app, (vid, on) in list(self.backups.items()):
            if on == worker:
                await self._drop(app)
                await self.event("backup_lost", "done", f"its warm backup {vid} was on failed {worker}", app)

    async def promote(self, app: str) -> None:
        """`app`'s backup now serves it as its primary: no longer a backup (the next plan backs it up
        anew), and the model autoscaler sees it as capacity from its next tick."""
        await self._drop(app)
        self.reserve()

    async def _drop(self, app: str) -> None:
        del self.backups[app]
        await self.redis.hdel(BACKUPS_KEY, app)

    def reserve(self) -> None:
        """Keep the backups out of the model autoscaler's view."""
        if self.scaler is not None:
            self.scaler.reserved = {(w, v) for v, w in self.backups.values()}

    # --- every tick ------------------------------------------------------------------------------

    async def plan(self, view: View) -> None:
        """Place the backups the proactive ILP plans over `view`, and remove those it no longer does."""
        families = await self.families(view)
        hosted = {(i.variant_id, i.worker_id) for i in view.instances}
        current = {app: pair for app, pair in self.backups.items() if pair in hosted}
        rooms = policy.rooms(
            view.workers, view.instances, view.variants, draining=view.draining, give_back=current.values()
        )
        plan = policy.place_warm(families, rooms, alpha=self.alpha, current=current)
        planned = {b.app: (b.variant, b.worker) for b in plan.backups}
        urls = {w.id: w.url for w in view.workers}
        for b in plan.backups:
            if current.get(b.app) == (b.variant, b.worker):
                continue
            try:
                if (b.variant, b.worker) not in hosted:
                    await self.executors.load(urls[b.worker], b.variant)
            except Exception as exc:
                await self.event(
                    "warm_backup", "failed", f"{b.reason} — load failed: {exc}", b.app, b.variant
                )
                continue
            self.backups[b.app] = (b.variant, b.worker)
            await self.redis.hset(BACKUPS_KEY, b.app, orjson.dumps([b.variant, b.worker]))
            await self.event("warm_backup", "done", b.reason, b.app, b.variant, b.worker)
        orphaned = {f.app for f in families if not f.primaries}
        for app, (vid, worker) in list(self.backups.items()):
            if planned.get(app) == (vid, worker):
                continue
            if app in orphaned and (vid, worker) in hosted:
                continue  # its primaries are gone: a failure, whose failover promotes this backup
            await self._drop(app)
            if (vid, worker) in hosted and worker in urls and (vid, worker) not in planned.values():
                await self.executors.drain_instance(urls[worker], vid)
            why = plan.unplaced.get(app, "the ILP placed a better backup")
            await self.event("warm_backup_removed", "done", why, app, vid, worker)
        self.reserve()
