"""Limits at the gateway's edge: body sizes enforced as the bytes arrive (413 before a large body is
buffered), and failed key verifications per client address (429 once an address spent its budget)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class FailureBucket:
    """One client address's budget of failed key verifications: `tokens` at monotonic time `at`."""

    tokens: float
    at: float


@dataclass(frozen=True, slots=True)
class FailurePolicy:
    """A token bucket per client address: `per_minute` failures at once, refilled at `per_minute` a
    minute. A pure policy over buckets and a time; `FailureLimiter` keeps the buckets."""

    per_minute: int

    def tokens(self, bucket: FailureBucket, now: float) -> float:
        refilled = bucket.tokens + max(0.0, now - bucket.at) * self.per_minute / 60.0
        return min(float(self.per_minute), refilled)

    def retry_after_s(self, bucket: FailureBucket | None, now: float) -> float:
        """0 when the address may try a key now; else the seconds until its next token."""
        if bucket is None or self.per_minute <= 0:
            return 0.0
        missing = 1.0 - self.tokens(bucket, now)
        return 0.0 if missing <= 0 else missing * 60.0 / self.per_minute

    def after_failure(self, bucket: FailureBucket | None, now: float) -> FailureBucket:
        tokens = float(self.per_minute) if bucket is None else self.tokens(bucket, now)
        return FailureBucket(tokens=max(0.0, tokens - 1.0), at=now)

    def full(self, bucket: FailureBucket, now: float) -> bool:
        """The bucket holds nothing worth keeping: forgetting it changes no answer."""
        return self.tokens(bucket, now) >= self.per_minute


class FailureLimiter:
    """Failed key verifications per client address, so the gateway is not a key oracle: an address that
    spent its budget is refused (429, `Retry-After`) until it refills, whatever key it sends next.

    Only addresses with a recent failure are kept, at most `max_clients` (the fullest go first), so a
    flood of addresses costs bounded memory; with none kept, a check is one empty-dict test."""

    def __init__(
        self, policy: FailurePolicy, *, clock: Callable[[], float] = time.monotonic, max_clients: int = 10_000
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.max_clients = max_clients
        self.buckets: dict[str, FailureBucket] = {}

    def retry_after_s(self, client: str | None) -> float:
        if not self.buckets or client is None:
            return 0.0
        return self.policy.retry_after_s(self.buckets.get(client), self.clock())

    def failed(self, client: str | None) -> None:
        if client is None or self.policy.per_minute <= 0:
            return
        now = self.clock()
        self.buckets[client] = self.policy.after_failure(self.buckets.pop(client, None), now)
        if len(self.buckets) > self.max_clients:
            self.buckets = {c: b for c, b in self.buckets.items() if not self.policy.full(b, now)}
            while len(self.buckets) > self.max_clients:  # all recent: the longest-untouched go
                del self.buckets[next(iter(self.buckets))]
