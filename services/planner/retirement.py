"""What a new pipeline plan leaves unused, drained once every gateway serves the new plan.

A re-plan loads the new plan's instances at once (`pipelines.make_plan`), but the previous plan's are
still where gateways send queries: each gateway caches a pipeline, with the variants it pins queries to,
for its auth cache TTL. Draining at once would make a query still pinned to an old variant cold-load it
again. So the planner decides at once which instances are superseded (`superseded`, pure; a `retire`
event) and drains them after the TTL (`Retirement.schedule`; a `drain` event each), unless the pipeline
was re-planned meanwhile: the newer plan decides what its predecessor leaves."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.core.aio import stop_tasks
from infaas.data import store
from infaas.policy.selection import USABLE_STATES, InstanceView
from infaas.schemas.api import ADMIN
from infaas.schemas.events import Outcome
from infaas.schemas.pipelines import Pipeline, PipelinePlan
from services.planner.event_log import EventLog

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Superseded:
    """An instance a new plan no longer uses."""

    stage: str
    variant: str
    worker: str
    reason: str


def superseded(
    previous: PipelinePlan | None,
    planned: PipelinePlan,
    instances: Iterable[InstanceView],
    elsewhere: set[str],
) -> list[Superseded]:
    """Every serving instance of a variant the previous plan had for a stage that the new plan plans for
    no stage (nor another pipeline's plan: `elsewhere`), and a planned variant's instances beyond its
    planned replicas (the last workers by name go)."""
    usable = [i for i in instances if i.state in USABLE_STATES]
    in_use = {s.variant for s in planned.stages} | elsewhere
    now = {s.stage: s for s in planned.stages}
    out: list[Superseded] = []
    for old in previous.stages if previous is not None else ():
        if old.variant in in_use:
            continue
        new = now.get(old.stage)
        instead = f"{new.variant} ×{new.replicas}" if new is not None else "no stage of that name"
        for worker in sorted({i.worker_id for i in usable if i.variant_id == old.variant}):
            reason = f"stage {old.stage} was planned on {old.variant}; the new plan serves it with {instead}"
            out.append(Superseded(old.stage, old.variant, worker, reason))
    for stage in planned.stages:
        hosts = sorted({i.worker_id for i in usable if i.variant_id == stage.variant})
        for worker in hosts[stage.replicas :]:
            reason = (
                f"stage {stage.stage}: {len(hosts)} instances of {stage.variant}, {stage.replicas} planned"
            )
            out.append(Superseded(stage.stage, stage.variant, worker, reason))
    return out


@dataclass
class Retirement:
    """The planner's drains of superseded instances: one task per new plan, `after_s` after it (past
    every gateway's cached copy of the pipeline). Drains not yet due when the planner stops are dropped:
    the instances stay, and the model autoscaler scales them in like any other."""

    redis: aioredis.Redis
    registry: AsyncRegistryClient
    executors: ExecutorClient
    events: EventLog
    heartbeat_ttl_s: float
    after_s: float
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def schedule(self, stored: Pipeline, previous: PipelinePlan | None) -> None:
        """Decide now which instances the plan `stored` holds leaves unused (against `previous`, the plan
        it replaces) and say so; drain them `after_s` later."""
        assert stored.plan is not None
        _, live = await store.read_live(self.redis, now=time.time(), ttl_s=self.heartbeat_ttl_s)
        others = [p for p in await self.registry.pipelines(ADMIN) if p.name != stored.name]
        elsewhere = {
            s.variant for p in others if p.plan is not None and p.plan.feasible for s in p.plan.stages
        }
        gone = superseded(previous, stored.plan, live, elsewhere)
        if not gone:
            return
        listed = "; ".join(f"{g.variant} on {g.worker} ({g.reason})" for g in gone)
        await self.events.record(
            kind="pipeline_planner",
            action="retire",
            outcome="decided",
            reason=f"pipeline {stored.name}: the new plan leaves {len(gone)} instances unused, drained in "
            f"{self.after_s:g} s (once every gateway serves the new plan): {listed}",
        )
        task = asyncio.create_task(self._drain_later(stored, gone))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def stop(self) -> None:
        await stop_tasks(*self.tasks)

    async def _drain_later(self, stored: Pipeline, gone: list[Superseded]) -> None:
        await asyncio.sleep(self.after_s)
        try:
            current = await self.registry.pipeline(stored.name)
            if (
                current.plan is None
                or stored.plan is None
                or current.plan.planned_at != stored.plan.planned_at
            ):
                reason = (
                    f"pipeline {stored.name}: re-planned or deleted since; nothing drained for the older plan"
                )
                await self.events.record(
                    kind="pipeline_planner", action="retire", outcome="failed", reason=reason
                )
                return
            workers, _ = await store.read_live(self.redis, now=time.time(), ttl_s=self.heartbeat_ttl_s)
            urls = {w.id: w.url for w in workers}
            for g in gone:
                outcome: Outcome = "done"
                why = g.reason
                try:
                    if g.worker in urls:
                        await self.executors.drain_instance(urls[g.worker], g.variant)
                    else:
                        outcome, why = "failed", f"{g.reason}; {g.worker} is no longer live"
                except Exception as exc:  # an instance unloaded meanwhile: an outcome, not a crash
                    outcome, why = "failed", f"{g.reason}; drain failed: {exc}"
                await self.events.record(
                    kind="pipeline_planner",
                    action="drain",
                    outcome=outcome,
                    reason=f"pipeline {stored.name}: {why}",
                    variant=g.variant,
                    worker=g.worker,
                )
        except Exception as exc:  # the registry or the event store away: said in the log, nothing drained
            log.warning("retiring the instances pipeline %s's plan left unused failed: %s", stored.name, exc)
