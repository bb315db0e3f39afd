"""The 500 answer to an unexpected exception, given without letting the exception reach the server.

Starlette's own last-resort handler (`ServerErrorMiddleware`, where FastAPI puts a handler registered
for `Exception`) sends the handler's response and then raises the exception again, for the server to
log; uvicorn then closes the connection. A client that had already put that kept-alive connection back
in its pool sent its next request onto a closing socket: with a 500 from one caller, about one in
eight following requests on the same pooled connection failed, whoever sent them (a gateway forwards
many tenants' requests over few connections). Caught here, below every other middleware, the
exception is logged once, answered with the JSON 500, and the connection stays usable.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("infaas")


class CatchAll:
    """Pure ASGI (no per-request task or body copy): only a flag, set by the response's first message."""

    def __init__(self, app: ASGIApp, *, service: str, body: bytes) -> None:
        self.app = app
        self.service = service
        self.body = body
        self.headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            method, path = scope.get("method"), scope.get("path")
            log.exception("unhandled error in %s (%s %s)", self.service, method, path)
            if started:  # half an answer is out: only closing the connection tells the client
                raise
            await send({"type": "http.response.start", "status": 500, "headers": self.headers})
            await send({"type": "http.response.body", "body": self.body})
