"""Typed client of the scheduler, used by the gateway on the query path."""

from __future__ import annotations

import httpx

from infaas.clients.base import unavailable

FRAME_TYPE = "application/x-infaas-frame"


class SchedulerClient:
    def __init__(
        self, base_url: str, *, timeout_s: float, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        # Keep-alive pool sized for a busy gateway: a new TCP connection per query would cost more
        # than the rest of the hop.
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=httpx.Timeout(timeout_s, connect=2.0),
            limits=limits,
            transport=transport,
        )

    async def infer(self, frame: bytes, *, request_id: str) -> httpx.Response:
        """Send a query frame; the scheduler's JSON answer (or error) is passed through untouched."""
        try:
            return await self._http.post(
                "/internal/infer",
                content=frame,
                headers={"content-type": FRAME_TYPE, "x-request-id": request_id},
            )
        except httpx.HTTPError as exc:
            raise unavailable("scheduler", exc) from exc

    async def aclose(self) -> None:
        await self._http.aclose()
