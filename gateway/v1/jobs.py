"""Public routes of offline jobs: passed through to the registry with the caller's identity; the result
is streamed through without buffering it here."""

from __future__ import annotations

from typing import Annotated

import httpx
from fastapi import APIRouter, File, Form, Request, Response, UploadFile
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from gateway.deps import PrincipalDep, StateDep
from gateway.v1.passthrough import ERRORS, forward
from infaas.clients.base import principal_headers, raise_for_error, segment, unavailable
from infaas.http.app import request_id
from infaas.jobs.schemas import Job

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

_JOB_ERRORS = {**ERRORS, 409: {"description": "the job is not in a state that allows this"}}


@router.post("", status_code=202, response_model=Job, responses=_JOB_ERRORS)
async def submit_job(
    request: Request,
    principal: PrincipalDep,
    metadata: Annotated[
        str,
        Form(
            description='JSON: {"app" | "model", "min_accuracy"?, "input_path"?, "output_path"?, '
            '"chunk_rows"?, "task"?} (see JobSubmit)'
        ),
    ],
    input: Annotated[  # noqa: A002 - the form field's public name
        UploadFile | None, File(description="The input rows: .npy, or .npz with `x` (or one array per input)")
    ] = None,
) -> Response:
    """Submit an offline job: the input is validated against the model now (wrong shape or dtype, a
    corrupt file, an unknown model fail here), then it runs in spare capacity. Poll `GET /v1/jobs/{id}`."""
    files = None
    if input is not None:
        files = {"input": (input.filename or "input", await input.read(), "application/octet-stream")}
    return await forward(request, principal, "POST", "/v1/jobs", files=files, data={"metadata": metadata})


@router.get("", response_model=list[Job], responses=_JOB_ERRORS)
async def list_jobs(request: Request, principal: PrincipalDep) -> Response:
    """The caller's jobs (every job for the admin key), newest first."""
    return await forward(request, principal, "GET", "/v1/jobs")


@router.get("/{job_id}", response_model=Job, responses=_JOB_ERRORS)
async def get_job(job_id: str, request: Request, principal: PrincipalDep) -> Response:
    """State (with the reason), rows done of total, throughput, ETA, errors, the variant chosen and why."""
    return await forward(request, principal, "GET", f"/v1/jobs/{segment(job_id)}")


@router.delete("/{job_id}", response_model=Job, responses=_JOB_ERRORS)
async def cancel_job(job_id: str, request: Request, principal: PrincipalDep) -> Response:
    """Cancel a job; chunks already running finish but are not recorded. 409 once the job has ended."""
    return await forward(request, principal, "DELETE", f"/v1/jobs/{segment(job_id)}")


@router.get(
    "/{job_id}/result",
    response_class=StreamingResponse,
    responses={
        **_JOB_ERRORS,
        200: {
            "content": {"application/octet-stream": {}},
            "description": "the output .npz, one array per output",
        },
    },
)
async def job_result(
    job_id: str, request: Request, state: StateDep, principal: PrincipalDep
) -> StreamingResponse:
    """The output `.npz` of a succeeded job (409 before: no partial result is ever served)."""
    http = state.registry.http
    headers = principal_headers(principal) | {"x-request-id": request_id(request)}
    try:
        upstream = await http.send(
            http.build_request("GET", f"/v1/jobs/{segment(job_id)}/result", headers=headers), stream=True
        )
    except httpx.HTTPError as exc:
        raise unavailable("registry", exc) from exc
    if upstream.status_code >= 400:
        await upstream.aread()
        await upstream.aclose()
        raise_for_error(upstream)
    passed = {k: v for k, v in upstream.headers.items() if k in ("content-length", "content-disposition")}
    return StreamingResponse(
        upstream.aiter_raw(),
        media_type="application/octet-stream",
        headers=passed,
        background=BackgroundTask(upstream.aclose),
    )
