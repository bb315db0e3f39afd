"""Typed clients of the registry's internal API (sync for Celery workers, async for services)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from infaas.clients.base import DEFAULT_TIMEOUT, raise_for_error, unavailable
from infaas.schemas import (
    AppInternal,
    ModelInternal,
    Principal,
    StatusUpdate,
    VariantReport,
    WorkerRegistration,
)


class RegistryClient:
    """Blocking client, for the profiler's Celery tasks."""

    def __init__(self, base_url: str, *, http: httpx.Client | None = None) -> None:
        # `http` lets tests hand in a client bound to the registry app in-process.
        self._http = http or httpx.Client(base_url=base_url, timeout=DEFAULT_TIMEOUT)

    def _send(self, method: str, url: str, **kwargs: object) -> httpx.Response:
        try:
            response = self._http.request(method, url, **kwargs)  # type: ignore[arg-type]
        except httpx.HTTPError as exc:
            raise unavailable("registry", exc) from exc
        raise_for_error(response)
        return response

    def model(self, model_id: int) -> ModelInternal:
        return ModelInternal.model_validate_json(self._send("GET", f"/internal/models/{model_id}").content)

    def set_status(self, model_id: int, status: StatusUpdate) -> None:
        self._send("POST", f"/internal/models/{model_id}/status", json=status.model_dump())

    def variants(self, model_id: int) -> list[VariantReport]:
        response = self._send("GET", f"/internal/models/{model_id}/variants")
        return [VariantReport.model_validate(v) for v in response.json()]

    def report_variants(self, model_id: int, reports: Sequence[VariantReport]) -> None:
        self._send(
            "PUT", f"/internal/models/{model_id}/variants", json=[r.model_dump(mode="json") for r in reports]
        )

    def close(self) -> None:
        self._http.close()


class AsyncRegistryClient:
    """Non-blocking client, for the gateway and the executor."""

    def __init__(self, base_url: str, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, timeout=DEFAULT_TIMEOUT, transport=transport)

    async def _send(self, method: str, url: str, **kwargs: object) -> httpx.Response:
        try:
            response = await self._http.request(method, url, **kwargs)  # type: ignore[arg-type]
        except httpx.HTTPError as exc:
            raise unavailable("registry", exc) from exc
        raise_for_error(response)
        return response

    async def verify_key(self, key: str) -> Principal:
        response = await self._send("POST", "/internal/keys/verify", json={"key": key})
        return Principal.model_validate_json(response.content)

    async def model_by_name(self, name: str) -> ModelInternal:
        response = await self._send("GET", f"/internal/models/by-name/{name}")
        return ModelInternal.model_validate_json(response.content)

    async def app(self, app: str) -> AppInternal:
        response = await self._send("GET", f"/internal/apps/{app}")
        return AppInternal.model_validate_json(response.content)

    async def register_worker(self, worker: WorkerRegistration) -> None:
        await self._send("POST", "/internal/workers", json=worker.model_dump())

    @property
    def http(self) -> httpx.AsyncClient:
        """The pooled connection, for the gateway's pass-through of public registry routes."""
        return self._http

    async def aclose(self) -> None:
        await self._http.aclose()
