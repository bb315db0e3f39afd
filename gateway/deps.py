"""What the gateway's routes depend on, as `Annotated` aliases: the gateway's state and the caller.

A route names what it needs in its signature (`state: StateDep`, `principal: PrincipalDep`) instead of
fetching the state and checking the key in its body. The Authorization header stays out of the OpenAPI
parameters: the schema declares bearer security once for every route.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from gateway.state import GatewayState
from infaas.schemas.api import NAME_PATTERN, Principal

NamePath = Annotated[str, Path(pattern=NAME_PATTERN, description="An app or model name.")]
"""An app or model name in a path: names outside the pattern they were registered under are refused with a
422 here, before they reach an internal URL."""
AuthHeader = Annotated[str | None, Header(alias="Authorization", include_in_schema=False)]


def state_of(request: Request) -> GatewayState:
    """The gateway's settings, clients and auth cache (set up by the app's lifespan)."""
    state: GatewayState = request.app.state.gateway
    return state


def client_address(request: Request) -> str | None:
    """The caller's address, as trusted proxies forwarded it: what failed key verifications count against."""
    return request.client.host if request.client else None


async def caller(request: Request, authorization: AuthHeader = None) -> Principal:
    """The caller of a `/v1` route, by its bearer key (401 without a known one)."""
    return await state_of(request).auth.principal(authorization, client_address(request))


StateDep = Annotated[GatewayState, Depends(state_of)]
PrincipalDep = Annotated[Principal, Depends(caller)]
