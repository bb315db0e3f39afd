"""Typed client of the planner's internal API (its event log)."""

from __future__ import annotations

import httpx

from infaas.clients.base import DEFAULT_TIMEOUT, raise_for_error, request_once_more, segment, unavailable
from infaas.core.credentials import internal_headers
from infaas.schemas.events import EventPage
from infaas.schemas.pipelines import Pipeline

PLAN_TIMEOUT_S = 120.0


class PlannerClient:
    def __init__(
        self, base_url: str, *, internal_key: str, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=DEFAULT_TIMEOUT,
            transport=transport,
            headers=internal_headers(internal_key),
        )

    async def events(
        self,
        *,
        limit: int = 100,
        before: int | None = None,
        model: str | None = None,
        kind: str | None = None,
        action: str | None = None,
    ) -> EventPage:
        params: dict[str, str | int] = {"limit": limit}
        for name, value in (("before", before), ("model", model), ("kind", kind), ("action", action)):
            if value is not None:
                params[name] = value
        try:
            response = await request_once_more(self._http, "GET", "/internal/events", params=params)
        except httpx.HTTPError as exc:
            raise unavailable("planner", exc) from exc
        raise_for_error(response)
        return EventPage.model_validate_json(response.content)

    async def plan_pipeline(self, name: str, *, rate_qps: float, cv: float, apply: bool) -> Pipeline:
        """Plan a pipeline for a rate and apply the plan (a plan takes seconds: its own timeout)."""
        body = {"rate_qps": rate_qps, "cv": cv, "apply": apply}
        try:
            response = await self._http.post(
                f"/internal/pipelines/{segment(name)}/plan", json=body, timeout=PLAN_TIMEOUT_S
            )
        except httpx.HTTPError as exc:
            raise unavailable("planner", exc) from exc
        raise_for_error(response)
        return Pipeline.model_validate_json(response.content)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> PlannerClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()
