"""`/v1/hardware` and `/v1/workers`: what the cluster has to run on (passed through to the registry)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from gateway.deps import PrincipalDep
from gateway.v1.passthrough import ERRORS, forward
from infaas.schemas.api import HardwareKind, Worker

router = APIRouter(prefix="/v1")


@router.get("/hardware", response_model=list[HardwareKind], responses=ERRORS)
async def hardware(request: Request, principal: PrincipalDep) -> Response:
    """Hardware kinds: which are available here, and why the others are not."""
    return await forward(request, principal, "GET", "/v1/hardware")


@router.get("/workers", response_model=list[Worker], responses=ERRORS)
async def list_workers(request: Request, principal: PrincipalDep) -> Response:
    """Registered workers, whether they are live, and the state of their instances (admin key)."""
    return await forward(request, principal, "GET", "/v1/workers")
