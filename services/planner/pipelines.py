"""The pipeline planner's mechanism: gather what the pure planner (`policies/pipeline_plan.py`) needs —
the pipeline, its stages' profiled variants, the scale factors observed in traffic, a sample trace at the
rate asked for — run it, store the plan in the registry, and apply it through the executors' instance
controls (load the planned variants' replicas), each step an event with its reason; what the previous plan
used and the new one does not is drained later (`retirement.py`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.core import workloads
from infaas.core.errors import InvalidInput, Unavailable
from infaas.data import store
from infaas.data.db import utcnow
from infaas.policy.selection import USABLE_STATES, InstanceView, WorkerView
from infaas.schemas.events import Outcome
from infaas.schemas.pipelines import Pipeline, PipelinePlan, StagePlan
from infaas.schemas.variants import VariantProfile
from services.planner.event_log import EventLog
from services.planner.policies.pipeline_plan import PlanResult, PlanStage, plan
from services.planner.policies.snapshot import cost_per_s
from services.planner.retirement import Retirement
from services.planner.simulator.pipelines import StageShape

log = logging.getLogger(__name__)


TRACE_S = 30.0
"""Length of the sample trace the planner estimates on: long enough for a stable P99 at the rates a
plan is asked for here, short enough that planning stays within a request's timeout."""


async def observed_scales(r: aioredis.Redis, pipeline: Pipeline) -> dict[str, float]:
    """s_m per stage from the models' demand counters: rows that reached the stage's model over rows that
    reached the root's (1.0 before any traffic: every branch assumed taken, the conservative plan)."""
    model_of = {s.name: s.model for s in pipeline.stages}
    rows = {}
    for name, model in model_of.items():
        raw = await r.hget(store.demand_key(model), "rows")
        rows[name] = int(raw) if raw else 0
    root = rows[pipeline.order[0]]
    return {n: (min(1.0, rows[n] / root) if root else 1.0) for n in pipeline.order}


def plan_stages(
    pipeline: Pipeline,
    variants: Mapping[str, VariantProfile],
    scales: Mapping[str, float],
    hardware: set[str],
    *,
    app_min_accuracy: float | None = None,
    lossy: bool = False,
) -> list[PlanStage]:
    """The stages parents first, each with the variants that may serve it: ready, not dominated, on
    hardware some live worker has, and within the stage's accuracy rule (`Pipeline.stage_accuracy`:
    its floor, or its model's accuracy as registered when no floor is stated and the app is not lossy)."""
    parent = {e.target: e.source for e in pipeline.edges}
    by_name = {s.name: s for s in pipeline.stages}
    out = []
    for name in pipeline.order:
        stage = by_name[name]
        floor, at_reference = pipeline.stage_accuracy(stage, app_min_accuracy=app_min_accuracy, lossy=lossy)
        fit = tuple(
            v
            for v in variants.values()
            if v.model == stage.model
            and not v.dominated
            and v.hardware in hardware
            and (floor is None or v.accuracy >= floor)
            and not (at_reference and v.reference_accuracy is not None and v.accuracy < v.reference_accuracy)
        )
        out.append(PlanStage(StageShape(name, parent.get(name), scales[name]), fit))
    return out


def as_plan(result: PlanResult, stages: list[PlanStage], rate_qps: float, cv: float) -> PipelinePlan:
    return PipelinePlan(
        stages=[
            StagePlan(
                stage=s.shape.name,
                variant=result.configs[s.shape.name].variant.id,
                hardware=result.configs[s.shape.name].variant.hardware,
                batch=result.configs[s.shape.name].batch,
                replicas=result.configs[s.shape.name].replicas,
                scale=s.shape.scale,
                cost_per_s=result.configs[s.shape.name].replicas
                * cost_per_s(result.configs[s.shape.name].variant),
            )
            for s in stages
            if s.shape.name in result.configs
        ],
        cost_per_s=result.cost_per_s,
        predicted_p99_ms=result.p99_ms,
        rate_qps=rate_qps,
        cv=cv,
        feasible=result.feasible,
        reason=result.reason,
        planned_at=utcnow(),
    )


async def make_plan(
    *,
    redis: aioredis.Redis,
    registry: AsyncRegistryClient,
    executors: ExecutorClient,
    events: EventLog,
    name: str,
    rate_qps: float,
    cv: float,
    heartbeat_ttl_s: float,
    apply: bool = True,
    retirement: Retirement | None = None,
) -> Pipeline:
    """Plan pipeline `name` for `rate_qps` gamma arrivals of CV `cv`, store the plan and (when feasible
    and `apply`) load the instances it needs, then have `retirement` drain the ones the previous plan
    used and this one does not (none without it). The pipeline with its plan."""
    pipeline = await registry.pipeline(name)
    workers, instances = await store.read_live(redis, now=time.time(), ttl_s=heartbeat_ttl_s)
    if not workers:
        raise Unavailable("no live worker to plan the pipeline on", pipeline=name)
    variants = await store.read_variants(redis)
    scales = await observed_scales(redis, pipeline)
    app = await registry.app(pipeline.app)
    stages = plan_stages(
        pipeline,
        variants,
        scales,
        {w.hardware for w in workers},
        app_min_accuracy=app.default_min_accuracy,
        lossy=app.lossy,
    )
    empty = [s.shape.name for s in stages if not s.variants]
    if empty:
        raise InvalidInput(f"stages {empty} have no ready variant at their accuracy floor", stages=empty)
    trace = workloads.gamma(rate_qps, TRACE_S, cv=cv, seed=0)
    result = await asyncio.to_thread(plan, stages, trace, pipeline.slo_ms)
    stored = await registry.set_pipeline_plan(name, as_plan(result, stages, rate_qps, cv))
    await events.record(
        kind="pipeline_planner",
        action="plan",
        outcome="decided" if result.feasible else "failed",
        reason=f"pipeline {name}: {result.reason}",
        details={"moves": result.moves, "cost_per_s": result.cost_per_s, "rate_qps": rate_qps, "cv": cv},
    )
    if result.feasible and apply and stored.plan is not None:
        await _apply(stored, stored.plan, workers, instances, executors, events, name)
        if retirement is not None:
            await retirement.schedule(stored, pipeline.plan)
    return stored


async def _apply(
    pipeline: Pipeline,
    planned: PipelinePlan,
    workers: tuple[WorkerView, ...],
    instances: tuple[InstanceView, ...],
    executors: ExecutorClient,
    events: EventLog,
    name: str,
) -> None:
    """Load each stage's planned replicas on workers of its hardware that do not host its variant yet
    (one instance of a variant per worker); fewer workers than replicas is said, not hidden."""
    model_of = {s.name: s.model for s in pipeline.stages}
    for stage in planned.stages:
        hosting = {
            i.worker_id for i in instances if i.variant_id == stage.variant and i.state in USABLE_STATES
        }
        free = [w for w in workers if w.hardware == stage.hardware and w.id not in hosting]
        missing = max(0, stage.replicas - len(hosting))
        targets = free[:missing]
        for worker in targets:
            outcome: Outcome = "done"
            why = "loaded"
            try:
                await executors.load(worker.url, stage.variant)
            except Exception as exc:  # a failed load is an outcome to record, not a crash of the planner
                outcome, why = "failed", f"load failed: {exc}"
            await events.record(
                kind="pipeline_planner",
                action="load",
                outcome=outcome,
                reason=f"pipeline {name}, stage {stage.stage}: {stage.replicas} replicas planned; {why}",
                model=model_of[stage.stage],
                variant=stage.variant,
                worker=worker.id,
            )
        if missing > len(targets):
            await events.record(
                kind="pipeline_planner",
                action="load",
                outcome="failed",
                reason=(
                    f"pipeline {name}, stage {stage.stage}: {stage.replicas} replicas planned, only "
                    f"{len(hosting) + len(targets)} {stage.hardware} workers can host {stage.variant}"
                ),
                variant=stage.variant,
            )
