"""Typed client of an executor's control API (load / unload instances)."""

from __future__ import annotations

import httpx

from infaas.clients.base import raise_for_error, unavailable


class ExecutorClient:
    """One pooled client for every executor; the worker's URL is given per call."""

    def __init__(
        self, *, load_timeout_s: float = 60.0, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(load_timeout_s, connect=2.0), transport=transport
        )

    async def load(self, worker_url: str, variant_id: str) -> dict[str, object]:
        """Load an instance of a variant; returns once it is active (or raises)."""
        try:
            response = await self._http.post(f"{worker_url}/v1/instances", json={"variant": variant_id})
        except httpx.HTTPError as exc:
            raise unavailable("executor", exc) from exc
        raise_for_error(response)
        data: dict[str, object] = response.json()
        return data

    async def unload(self, worker_url: str, variant_id: str) -> None:
        try:
            response = await self._http.delete(f"{worker_url}/v1/instances/{variant_id}")
        except httpx.HTTPError as exc:
            raise unavailable("executor", exc) from exc
        raise_for_error(response)

    async def aclose(self) -> None:
        await self._http.aclose()
