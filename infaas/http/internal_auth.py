"""Internal authentication of a service's HTTP app: only requests that carry the suite's internal key get
past it (`infaas.core.credentials`).

Pure ASGI, one pass over the request's headers and one constant-time comparison: it sits on the remote
scheduler's `/internal/infer`, the query path. `/health` stays open for liveness probes; `/metrics` is
behind the key like everything else (it names apps, models and workers): the gateway's admin UI scrapes it
with the key, Prometheus with it as a bearer token.
"""

from __future__ import annotations

import logging

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from infaas.core.credentials import INTERNAL_HEADER, carries_key

log = logging.getLogger("infaas.auth")

OPEN_PATHS = frozenset({"/health"})
"""Paths answered without the key: a liveness probe holds no secret."""

_HEADER = INTERNAL_HEADER.encode()


class InternalAuth:
    """Refuses (401, JSON error) every request but `OPEN_PATHS` without the internal key."""

    def __init__(self, app: ASGIApp, *, key: str, service: str) -> None:
        self.app = app
        self.key = key.encode()
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or self._carries_key(scope):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        reason = "no internal key configured" if not self.key else "missing or wrong internal key"
        log.warning(
            "refused %s %s from %s: %s",
            scope["method"],
            scope["path"],
            client[0] if client else "?",
            reason,
            extra={"refused": "internal_key"},
        )
        message = (
            f"{self.service} is internal: requests need the suite's internal key in {INTERNAL_HEADER}"
            if self.key
            else f"{self.service} has no internal key configured (INFAAS_INTERNAL_KEY) and refuses requests"
        )
        await send_error(send, 401, "unauthorized", message)

    def _carries_key(self, scope: Scope) -> bool:
        header = authorization = None
        for name, value in scope["headers"]:
            if name == _HEADER:
                header = value
            elif name == b"authorization":
                authorization = value
        return carries_key(header, authorization, self.key)


async def send_error(send: Send, status: int, code: str, message: str) -> None:
    """A JSON error answered straight from ASGI, in the services' error shape."""
    body = orjson.dumps({"error": {"code": code, "message": message}})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))],
        }
    )
    await send({"type": "http.response.body", "body": body})
