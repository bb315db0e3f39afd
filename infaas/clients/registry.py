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
from infaas.core.errors import NotFound
from infaas.data.artifacts import Sink
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
from infaas.schemas.parity import ParityReport, ParityStatus
from infaas.schemas.pipelines import Pipeline, PipelinePlan
from infaas.schemas.selection import HeadPrior, PersonalHead

ARTIFACT_CHUNK = 1 << 20
"""Bytes of a download written at a time (and hashed on the way by the receiving cache)."""

_APPS = TypeAdapter(list[App])
_MODELS = TypeAdapter(list[Model])
_VARIANTS = TypeAdapter(list[Variant])
_WORKERS = TypeAdapter(list[Worker])
_PIPELINES = TypeAdapter(list[Pipeline])


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

    # --- the model repository, for a machine without the registry's artifact directory ---

    def download(self, digest: str, into: Sink) -> None:
        """Stream an artifact into `into` (the caller verifies its digest); `NotFound` if absent."""
        try:
            with self._http.stream("GET", f"/internal/artifacts/{segment(digest)}") as response:
                if response.status_code >= 400:
                    response.read()
                    raise_for_error(response)
                for chunk in response.iter_bytes(ARTIFACT_CHUNK):
                    into.write(chunk)
        except httpx.HTTPError as exc:
            raise unavailable("registry", exc) from exc

    def upload(self, digest: str, data: bytes) -> None:
        # httpx's timeouts bound each read and write, not the whole body: a large upload that progresses
        # is not cut short, a stalled one is.
        self._send("PUT", f"/internal/artifacts/{segment(digest)}", content=data)

    def has(self, digest: str) -> bool:
        try:
            response = request_once_more_sync(self._http, "HEAD", f"/internal/artifacts/{segment(digest)}")
        except httpx.HTTPError as exc:
            raise unavailable("registry", exc) from exc
        if response.status_code == 404:
            return False
        raise_for_error(response)
        return True

    def report_parity(self, model_id: int, report: ParityReport) -> None:
        """A parity training's progress or result; Conflict when a newer training superseded it."""
        self._send("PUT", f"/internal/models/{model_id}/parity", json=report.model_dump(mode="json"))

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

    async def pipeline(self, name: str) -> Pipeline:
        response = await self._send("GET", f"/internal/pipelines/{segment(name)}")
        return Pipeline.model_validate_json(response.content)

    async def set_pipeline_plan(self, name: str, plan: PipelinePlan) -> Pipeline:
        response = await self._send(
            "PUT", f"/internal/pipelines/{segment(name)}/plan", json=plan.model_dump(mode="json")
        )
        return Pipeline.model_validate_json(response.content)

    async def app(self, app: str) -> AppInternal:
        response = await self._send("GET", f"/internal/apps/{segment(app)}")
        return AppInternal.model_validate_json(response.content)

    async def head(self, model_id: int, user: str) -> PersonalHead | None:
        """A user's durable Velox head, or None when the user has none."""
        try:
            response = await self._send("GET", f"/internal/models/{model_id}/heads/{segment(user)}")
        except NotFound:
            return None
        return PersonalHead.model_validate_json(response.content)

    async def put_head(self, model_id: int, head: PersonalHead) -> None:
        await self._send(
            "PUT",
            f"/internal/models/{model_id}/heads/{segment(head.user)}",
            json=head.model_dump(),
            retry=True,
        )

    async def head_prior(self, model_id: int) -> HeadPrior:
        response = await self._send("GET", f"/internal/models/{model_id}/heads-prior")
        return HeadPrior.model_validate_json(response.content)

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

    async def parity(self, principal: Principal, name: str) -> ParityStatus | None:
        """The model's parity model, or None when it has none (its app's redundancy is not parity)."""
        try:
            response = await self._send(
                "GET", f"/v1/models/{segment(name)}/parity", headers=principal_headers(principal)
            )
        except NotFound:
            return None
        return ParityStatus.model_validate_json(response.content)

    async def pipelines(self, principal: Principal) -> list[Pipeline]:
        response = await self._send("GET", "/v1/pipelines", headers=principal_headers(principal))
        return _PIPELINES.validate_json(response.content)

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
