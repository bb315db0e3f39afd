"""Every HTTP route of the planner, all internal (left out of the OpenAPI schema), each thin over what the
loops keep on `app.state`: the cluster the planner sees, its event log, the offline-jobs throttle."""

from __future__ import annotations

import time

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from infaas.core.config import Settings
from infaas.data import store
from infaas.schemas.api import INT64_MAX
from infaas.schemas.events import EventPage
from services.planner import metrics
from services.planner.event_log import EventLog
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


@router.get("/internal/jobs/throttle", response_model=ThrottleView)
async def throttle(request: Request) -> ThrottleView:
    """The offline-jobs throttle's last decision, with the reason for each worker."""
    decision: ThrottleDecision | None = request.app.state.jobs_loop.decision
    if decision is None:
        return ThrottleView(paused=True, reason="no decision yet", eligible=[], workers={})
    return ThrottleView(
        paused=decision.paused,
        reason=decision.reason,
        eligible=list(decision.eligible),
        workers=dict(decision.reasons),
    )
