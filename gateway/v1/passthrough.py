"""Registry routes passed through the gateway with the caller's identity, and the errors they document."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import Request, Response

from gateway.deps import state_of
from infaas.clients.base import principal_headers, raise_for_error, request_once_more, unavailable
from infaas.http.app import request_id
from infaas.schemas.api import Principal
from infaas.schemas.errors import ErrorBody

ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorBody, "description": d}
    for s, d in (
        (401, "missing or unknown API key"),
        (403, "the key belongs to another app"),
        (404, "unknown app or model"),
        (413, "body too large"),
        (422, "invalid input"),
    )
}


async def forward(request: Request, principal: Principal, method: str, path: str, **kwargs: Any) -> Response:
    """Pass a registry route through, errors included, without re-serializing the body."""
    http = state_of(request).registry.http
    headers = principal_headers(principal) | {"x-request-id": request_id(request)}
    try:
        upstream = await request_once_more(http, method, path, headers=headers, **kwargs)
    except httpx.HTTPError as exc:
        raise unavailable("registry", exc) from exc
    raise_for_error(upstream)
    return Response(
        upstream.content, status_code=upstream.status_code, media_type=upstream.headers.get("content-type")
    )
