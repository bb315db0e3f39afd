"""`GET /v1/events`: what the planner, the registry and the supervisor decided or did, and why (admin key)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from gateway.deps import PrincipalDep, StateDep
from infaas.clients.planner import PlannerClient
from infaas.core.errors import Forbidden
from infaas.schemas.api import INT64_MAX, NAME_PATTERN
from infaas.schemas.events import EventKind, EventPage

router = APIRouter(prefix="/v1")

ACTION_PATTERN = r"^[a-z_]{1,32}$"
"""Actions are lowercase words (`replicate`, `add_worker`, …); anything else names no event."""


@router.get(
    "/events",
    response_model=EventPage,
    responses={401: {"description": "missing or unknown API key"}, 403: {"description": "not the admin key"}},
)
async def list_events(
    state: StateDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before: Annotated[
        int | None, Query(ge=1, le=INT64_MAX, description="page: events older than this id")
    ] = None,
    model: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None,
    kind: EventKind | None = None,
    action: Annotated[str | None, Query(pattern=ACTION_PATTERN)] = None,
) -> EventPage:
    """Scaling decisions and their outcomes, newest first, each with the reason the planner gave."""
    if principal.role != "admin":
        raise Forbidden("events are visible to the admin key only")
    # Not a hot route: a short-lived client keeps the gateway's shared state untouched.
    async with PlannerClient(
        state.settings.service_url("planner"), internal_key=state.settings.internal_key
    ) as planner:
        return await planner.events(limit=limit, before=before, model=model, kind=kind, action=action)
