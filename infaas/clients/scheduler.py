"""Typed client of the scheduler, used by the gateway on the query path."""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit

from infaas.clients.rawhttp import ConnectionLost, RawHTTPPool, RawResponse
from infaas.core.errors import InfaasError, Unavailable
from infaas.wire.frames import Message

FRAME_TYPE = "application/x-infaas-frame"


class QueryDispatch(Protocol):
    """What the gateway needs of a scheduler: hand over a query (a frame's header and tensors, encoded
    only if it leaves the process), get the JSON answer.

    Two implementations: `SchedulerClient` (the scheduler as its own service, one HTTP hop) and the
    scheduler's dispatcher embedded in the gateway process (`services.scheduler.app.EmbeddedScheduler`,
    composed by the CLI), which saves that hop on every query. Errors are raised as `InfaasError`s or
    returned as an error status that `raise_for_error` turns into one.
    """

    async def start(self) -> None: ...

    async def infer(self, frame: Message, *, request_id: str) -> RawResponse: ...

    async def aclose(self) -> None: ...


class SchedulerClient:
    def __init__(self, base_url: str, *, timeout_s: float, connections: int = 128) -> None:
        url = urlsplit(base_url)
        # Kept-alive connections with pre-encoded heads: this hop runs once per query.
        self._pool = RawHTTPPool(
            url.hostname or "127.0.0.1", url.port or 80, size=connections, timeout_s=timeout_s
        )

    async def start(self) -> None:
        """Connections open on first use."""

    async def infer(self, frame: Message, *, request_id: str) -> RawResponse:
        """Send a query frame; the scheduler's JSON answer (or error) is passed through untouched."""
        try:
            return await self._pool.post(
                "/internal/infer", frame.encode(), {"Content-Type": FRAME_TYPE, "X-Request-Id": request_id}
            )
        except (OSError, ConnectionLost, TimeoutError) as exc:
            raise unavailable(exc) from exc

    async def aclose(self) -> None:
        await self._pool.aclose()


def unavailable(exc: Exception) -> InfaasError:
    return Unavailable("scheduler is unreachable", service="scheduler", reason=type(exc).__name__)
