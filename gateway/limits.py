"""Body size limits enforced as the bytes arrive (413 before a large body is buffered)."""

from __future__ import annotations

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimit:
    """Rejects bodies over the limit by Content-Length, and chunked bodies as soon as they exceed it."""

    def __init__(self, app: ASGIApp, *, default_limit: int, upload_limit: int) -> None:
        self.app = app
        self.default_limit = default_limit
        self.upload_limit = upload_limit

    def _limit(self, scope: Scope) -> int:
        if scope["method"] == "POST" and scope["path"].rstrip("/") == "/v1/models":
            return self.upload_limit
        return self.default_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    too_big = int(value) > limit
                except ValueError:
                    too_big = False
                if too_big:
                    await _reject(send, limit, oip=scope["path"].startswith("/v2/"))
                    return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # Raised inside the route's body read, so the app's handler renders the 413.
                    raise HTTPException(413, detail=f"the request body is larger than {limit} bytes")
            return message

        await self.app(scope, limited_receive, send)


async def _reject(send: Send, limit: int, *, oip: bool = False) -> None:
    message = f"the request body is larger than {limit} bytes"
    error = {"code": "payload_too_large", "message": message, "limit": limit}
    # The Open Inference Protocol's error is a string (its clients read `error` as the message).
    body = orjson.dumps({"error": message, "code": "payload_too_large"} if oip else {"error": error})
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
