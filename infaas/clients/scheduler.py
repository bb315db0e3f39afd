"""Typed client of the scheduler, used by the gateway on the query path."""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit

from infaas.clients.base import raise_for_error
from infaas.clients.envelope import FRAME_TYPE, Answer, Query
from infaas.clients.rawhttp import ConnectionLost, RawHTTPPool
from infaas.core.credentials import internal_headers
from infaas.core.errors import InfaasError, Unavailable


class QueryDispatch(Protocol):
    """What the gateway needs of a scheduler: hand over a query, get its answer (`infaas.clients.envelope`).

    Two implementations: `SchedulerClient` (the scheduler as its own service, one HTTP hop, both as
    frames) and the scheduler's dispatcher embedded in the gateway process
    (`services.scheduler.app.EmbeddedScheduler`, composed by the CLI), which takes the query object
    itself and saves that hop on every query. Errors are raised as `InfaasError`s.
    """

    async def start(self) -> None: ...

    async def infer(self, query: Query) -> Answer: ...

    def serving(self) -> dict[str, int] | None:
        """Instances per variant that serve or will (`USABLE_STATES`) on live workers, as this
        dispatcher's snapshot holds them; None where it holds none (the scheduler is a service apart)."""
        ...

    async def aclose(self) -> None: ...


class SchedulerClient:
    def __init__(self, base_url: str, *, internal_key: str, timeout_s: float, connections: int = 128) -> None:
        url = urlsplit(base_url)
        self._headers = {"Content-Type": FRAME_TYPE, **internal_headers(internal_key)}
        # Kept-alive connections with pre-encoded heads: this hop runs once per query.
        self._pool = RawHTTPPool(
            url.hostname or "127.0.0.1", url.port or 80, size=connections, timeout_s=timeout_s
        )

    async def start(self) -> None:
        """Connections open on first use."""

    def serving(self) -> dict[str, int] | None:
        return None  # its snapshot is in the scheduler's process

    async def infer(self, query: Query) -> Answer:
        """Send a query frame; its answer frame decoded, or the scheduler's error raised here."""
        try:
            response = await self._pool.post(
                "/internal/infer",
                query.encode(),
                {**self._headers, "X-Request-Id": query.request_id},
            )
        except (OSError, ConnectionLost, TimeoutError) as exc:
            raise unavailable(exc) from exc
        raise_for_error(response)
        return Answer.decode(response.content)

    async def aclose(self) -> None:
        await self._pool.aclose()


def unavailable(exc: Exception) -> InfaasError:
    return Unavailable("scheduler is unreachable", service="scheduler", reason=type(exc).__name__)
