"""What the gateway's answers say about authentication, on every route: `WWW-Authenticate` on a 401
(RFC 6750: the caller is told to send a bearer key), and `x-infaas-stale-auth: <age s>` when the key,
app or model that let the request through came from the gateway's cache while the registry could not
be reached (`gateway/ttl_cache.py`, `auth_stale_max_s`), counted in `infaas_gateway_stale_auth_total`.

The query lane renders its own answers (`gateway/dataplane/lane.py` sets `STALE_AGES`, uses `headers_for`);
every other route passes `AuthHeaders`, an ASGI middleware, so each route need not remember either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from prometheus_client import Counter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CHALLENGE = b'Bearer realm="infaas"'
STALE_HEADER = b"x-infaas-stale-auth"

STALE_AUTH = Counter(
    "infaas_gateway_stale_auth_total",
    "Look-ups answered from the gateway's cache past its TTL because the registry was unreachable",
    ["kind"],
)

STALE_AGES: ContextVar[list[float] | None] = ContextVar("stale_auth_ages", default=None)
"""The ages of the stale entries one request used: a list set per request (`collecting`, or the lane
itself), so code deeper in the request, and tasks it starts (they copy the context), add to that one."""


def note_stale(kind: str, age_s: float) -> None:
    """A cache entry of `kind` (key, app, model) answered `age_s` after it was loaded."""
    STALE_AUTH.labels(kind).inc()
    ages = STALE_AGES.get()
    if ages is not None:
        ages.append(age_s)


@contextmanager
def collecting() -> Iterator[list[float]]:
    """The stale ages noted while the block runs (one request)."""
    ages: list[float] = []
    token = STALE_AGES.set(ages)
    try:
        yield ages
    finally:
        STALE_AGES.reset(token)


def headers_for(status: int, stale_ages: list[float]) -> list[tuple[bytes, bytes]]:
    """The headers an answer with `status` gets, after a request that used `stale_ages`."""
    headers = []
    if status == 401:
        headers.append((b"www-authenticate", CHALLENGE))
    if stale_ages:
        headers.append((STALE_HEADER, str(round(max(stale_ages))).encode()))
    return headers


class AuthHeaders:
    """Adds `headers_for` to every HTTP answer of the app it wraps."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with collecting() as ages:

            async def send_with_headers(message: Message) -> None:
                if message["type"] == "http.response.start":
                    extra = headers_for(message["status"], ages)
                    if extra:
                        message = {**message, "headers": [*message.get("headers", ()), *extra]}
                await send(message)

            await self.app(scope, receive, send_with_headers)
