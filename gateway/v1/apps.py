"""`/v1/apps`: create, list, show and update apps (passed through to the registry)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from gateway.deps import NamePath, PrincipalDep, StateDep
from gateway.v1.passthrough import ERRORS, forward
from infaas.clients.base import segment
from infaas.schemas.api import App, AppCreate, AppCreated, AppUpdate

router = APIRouter(prefix="/v1")


@router.post("/apps", status_code=201, response_model=AppCreated, responses=ERRORS)
async def create_app(body: AppCreate, request: Request, principal: PrincipalDep) -> Response:
    """Create an app (admin key). The answer holds the app's API key, shown only this once."""
    return await forward(request, principal, "POST", "/v1/apps", json=body.model_dump())


@router.get("/apps", response_model=list[App], responses=ERRORS)
async def list_apps(request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", "/v1/apps")


@router.get("/apps/{app}", response_model=App, responses=ERRORS)
async def get_app(app: NamePath, request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", f"/v1/apps/{segment(app)}")


@router.patch("/apps/{app}", response_model=App, responses=ERRORS)
async def update_app(
    app: NamePath, body: AppUpdate, request: Request, state: StateDep, principal: PrincipalDep
) -> Response:
    """Change an app's default requirements, SLO-miss policy, cache and cost/latency preference."""
    response = await forward(
        request, principal, "PATCH", f"/v1/apps/{segment(app)}", json=body.model_dump(exclude_unset=True)
    )
    state.auth.apps.drop(app)  # this gateway applies the change at once; others within the cache TTL
    return response
