"""Typed clients of the registry's internal API (sync for Celery workers, async for services)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import TypeAdapter

from infaas.clients.base import (
    DEFAULT_TIMEOUT,
    principal_headers,
    raise_for_error,
    request_once_more,
    request_once_more_sync,
    segment,
    unavailable,
)
from infaas.core.credentials import internal_headers
from infaas.schemas.api import (
    App,
    AppInternal,
    Model,
    ModelInternal,
    Principal,
    StatusUpdate,
    Variant,
    VariantReport,
    Worker,
    WorkerRegistration,
)

_APPS = TypeAdapter(list[App])
_MODELS = TypeAdapter(list[Model])
_VARIANTS = TypeAdapter(list[Variant])
_WORKERS = TypeAdapter(list[Worker])


class RegistryClient:
    """Blocking client, for the profiler's Celery tasks."""

    def __init__(self, base_url: str, *, internal_key: str, http: httpx.Client | None = None) -> None:
        # `http` lets tests hand in a client bound to the registry app in-process.
        self._http = http or httpx.Client(base_url=base_url, timeout=DEFAULT_TIMEOUT)
        self._http.headers.update(internal_headers(internal_key))

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            response = request_once_more_sync(self._http, method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise unavailable("registry", exc) from exc
        raise_for_error(response)
        return response

    def model(self, model_id: int) -> ModelInternal:
        return ModelInternal.model_validate_json(self._send("GET", f"/internal/models/{model_id}").content)

    def set_status(self, model_id: int, status: StatusUpdate, *, attempt: int | None = None) -> None:
        """`attempt`: the profiling attempt reporting; the registry refuses a stale one (Conflict)."""
        self._send(
            "POST", f"/internal/models/{model_id}/status", json=status.model_dump(), params=_attempt(attempt)
        )

    def claim_profile(self, model_id: int, *, attempt: int, hardware: str, worker: str | None) -> None:
        """Take a profiling attempt (no worker: hand it to `hardware`'s queue); Conflict when it is stale
        or over, NotFound when the model is gone."""
        params: dict[str, str | int] = {"attempt": attempt, "hardware": hardware}
        if worker:
            params["worker"] = worker
        self._send("POST", f"/internal/models/{model_id}/profile/claim", params=params)

    def variants(self, model_id: int) -> list[VariantReport]:
        response = self._send("GET", f"/internal/models/{model_id}/variants")
        return [VariantReport.model_validate(v) for v in response.json()]

    def report_variants(
        self, model_id: int, reports: Sequence[VariantReport], *, attempt: int | None = None
    ) -> None:
        self._send(
            "PUT",
            f"/internal/models/{model_id}/variants",
            json=[r.model_dump(mode="json") for r in reports],
            params=_attempt(attempt),
        )

    def close(self) -> None:
        self._http.close()


def _attempt(attempt: int | None) -> dict[str, int]:
    return {} if attempt is None else {"attempt": attempt}


class AsyncRegistryClient:
    """Non-blocking client, for the gateway and the executor."""

    def __init__(
        self, base_url: str, *, internal_key: str, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=DEFAULT_TIMEOUT,
            transport=transport,
            headers=internal_headers(internal_key),
        )

    async def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await request_once_more(self._http, method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise unavailable("registry", exc) from exc
        raise_for_error(response)
        return response

    async def verify_key(self, key: str) -> Principal:
        # A POST that only reads: safe to send again.
        response = await self._send("POST", "/internal/keys/verify", json={"key": key}, retry=True)
        return Principal.model_validate_json(response.content)

    async def model_by_name(self, name: str) -> ModelInternal:
        response = await self._send("GET", f"/internal/models/by-name/{segment(name)}")
        return ModelInternal.model_validate_json(response.content)

    async def app(self, app: str) -> AppInternal:
        response = await self._send("GET", f"/internal/apps/{segment(app)}")
        return AppInternal.model_validate_json(response.content)

    async def register_worker(self, worker: WorkerRegistration) -> None:
        await self._send("POST", "/internal/workers", json=worker.model_dump())

    # --- public resources as a given caller sees them (the admin UI reads these) ---

    async def apps(self, principal: Principal) -> list[App]:
        response = await self._send("GET", "/v1/apps", headers=principal_headers(principal))
        return _APPS.validate_json(response.content)

    async def models(self, principal: Principal) -> list[Model]:
        response = await self._send("GET", "/v1/models", headers=principal_headers(principal))
        return _MODELS.validate_json(response.content)

    async def model(self, principal: Principal, name: str) -> Model:
        response = await self._send(
            "GET", f"/v1/models/{segment(name)}", headers=principal_headers(principal)
        )
        return Model.model_validate_json(response.content)

    async def variants(self, principal: Principal, name: str) -> list[Variant]:
        response = await self._send(
            "GET", f"/v1/models/{segment(name)}/variants", headers=principal_headers(principal)
        )
        return _VARIANTS.validate_json(response.content)

    async def workers(self, principal: Principal) -> list[Worker]:
        response = await self._send("GET", "/v1/workers", headers=principal_headers(principal))
        return _WORKERS.validate_json(response.content)

    @property
    def http(self) -> httpx.AsyncClient:
        """The pooled connection, for the gateway's pass-through of public registry routes (it carries the
        internal key: the registry accepts the caller identity the gateway vouches for only with it)."""
        return self._http

    async def aclose(self) -> None:
        await self._http.aclose()
