"""Typed clients of the registry's internal job routes: blocking for the jobs worker (Celery), async for
the planner's throttle loop."""

from __future__ import annotations

from typing import Any

import httpx

from infaas.clients.base import raise_for_error, request_once_more_sync, segment, unavailable
from infaas.core.credentials import internal_headers
from infaas.jobs.schemas import ChunkDone, ChunkDoneResult, ChunkRelease, ChunkTask, JobsTick, JobsTickResult

# Completing a job's last chunk assembles its output in the same request: allow it time.
JOBS_TIMEOUT = httpx.Timeout(60.0, connect=2.0)


class JobsClient:
    """Blocking client, for the jobs worker's Celery tasks."""

    def __init__(self, base_url: str, *, internal_key: str, http: httpx.Client | None = None) -> None:
        self._http = http or httpx.Client(base_url=base_url, timeout=JOBS_TIMEOUT)
        self._http.headers.update(internal_headers(internal_key))

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            response = request_once_more_sync(self._http, method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise unavailable("registry", exc) from exc
        raise_for_error(response)
        return response

    def chunk(self, job_id: str, index: int) -> ChunkTask:
        return ChunkTask.model_validate_json(
            self._send("GET", f"/internal/jobs/{segment(job_id)}/chunks/{index}").content
        )

    def done(self, job_id: str, index: int, body: ChunkDone) -> ChunkDoneResult:
        response = self._send(
            "POST", f"/internal/jobs/{segment(job_id)}/chunks/{index}/done", json=body.model_dump()
        )
        return ChunkDoneResult.model_validate_json(response.content)

    def release(self, job_id: str, index: int, body: ChunkRelease) -> None:
        self._send("POST", f"/internal/jobs/{segment(job_id)}/chunks/{index}/release", json=body.model_dump())

    def close(self) -> None:
        self._http.close()


class AsyncJobsClient:
    """Async client, for the planner."""

    def __init__(
        self, base_url: str, *, internal_key: str, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=JOBS_TIMEOUT,
            transport=transport,
            headers=internal_headers(internal_key),
        )

    async def tick(self, body: JobsTick) -> JobsTickResult:
        try:
            response = await self._http.post("/internal/jobs/tick", json=body.model_dump())
        except httpx.HTTPError as exc:
            raise unavailable("registry", exc) from exc
        raise_for_error(response)
        return JobsTickResult.model_validate_json(response.content)

    async def aclose(self) -> None:
        await self._http.aclose()
