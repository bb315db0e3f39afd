"""Every HTTP route of the planner, all internal (left out of the OpenAPI schema), each thin over what the
loops keep on `app.state`: the cluster the planner sees, its event log, the offline-jobs throttle."""

from __future__ import annotations

import time

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from infaas.core.config import Settings
from infaas.core.errors import Unavailable
from infaas.data import store
from infaas.schemas.api import INT64_MAX
from infaas.schemas.events import EventPage
from infaas.schemas.pipelines import Pipeline
from services.planner import metrics, pipelines
from services.planner.event_log import EventLog
from services.planner.loops.jobs import JobsLoop
from services.planner.policies.throttle import ThrottleDecision

router = APIRouter(include_in_schema=False)


@router.get("/internal/cluster")
async def cluster(request: Request) -> dict[str, object]:
    """The live workers and instances the planner would plan over."""
    settings: Settings = request.app.state.settings
    workers, instances = await store.read_live(
        request.app.state.redis, now=time.time(), ttl_s=settings.heartbeat_ttl_s
    )
    metrics.LIVE_WORKERS.set(len(workers))
    return {
        "workers": [w.id for w in workers],
        "instances": [{"worker": i.worker_id, "variant": i.variant_id, "state": i.state} for i in instances],
    }


@router.get("/internal/events", response_model=EventPage)
async def list_events(
    request: Request,
    limit: int = Query(100, ge=1, le=1000),
    before: int | None = Query(None, ge=1, le=INT64_MAX),
    model: str | None = None,
    kind: str | None = None,
    action: str | None = None,
) -> EventPage:
    """Scaling decisions and their outcomes, newest first (the gateway's `/v1/events` reads this)."""
    events: EventLog = request.app.state.events
    return EventPage(
        events=await events.list(limit=limit, before=before, model=model, kind=kind, action=action)
    )


class ThrottleView(BaseModel):
    paused: bool
    reason: str
    eligible: list[str]
    workers: dict[str, str]
    age_s: float | None = None
    """How long ago the decision was made: every `job_tick_s` while a job is active, every
    `job_idle_tick_s` (or at a submission) while none is."""


@router.get("/internal/jobs/throttle", response_model=ThrottleView)
async def throttle(request: Request) -> ThrottleView:
    """The offline-jobs throttle's last decision, with the reason for each worker."""
    loop: JobsLoop = request.app.state.jobs_loop
    decision: ThrottleDecision | None = loop.decision
    if decision is None or loop.decided_at is None:
        return ThrottleView(paused=True, reason="no decision yet", eligible=[], workers={}, age_s=None)
    return ThrottleView(
        paused=decision.paused,
        reason=decision.reason,
        eligible=list(decision.eligible),
        workers=dict(decision.reasons),
        age_s=round(loop.clock() - loop.decided_at, 3),
    )


class PlanRequest(BaseModel):
    rate_qps: float = Field(gt=0, le=1_000_000, allow_inf_nan=False, description="Arrival rate to plan for.")
    cv: float = Field(1.0, gt=0, le=16, allow_inf_nan=False, description="CV of gamma inter-arrivals.")
    apply: bool = Field(True, description="Load the planned instances (False: plan and store only).")


@router.post("/internal/pipelines/{name}/plan", response_model=Pipeline)
async def plan_pipeline(name: str, body: PlanRequest, request: Request) -> Pipeline:
    """Plan a pipeline (InferLine's planner) for a rate, store the plan, and apply it."""
    state = request.app.state
    if not hasattr(state, "registry"):
        raise Unavailable("the planner's control loops are not running here", pipeline=name)
    planned = await pipelines.make_plan(
        redis=state.redis,
        registry=state.registry,
        executors=state.executors,
        events=state.events,
        name=name,
        rate_qps=body.rate_qps,
        cv=body.cv,
        heartbeat_ttl_s=state.settings.heartbeat_ttl_s,
        apply=body.apply,
        retirement=getattr(state, "pipeline_retirement", None),
    )
    if hasattr(state, "pipeline_claims"):  # the plan changes what the model autoscaler leaves alone
        state.pipeline_claims.expire()
    return planned
