"""Registry routes of offline jobs: public (reached through the gateway) and internal (planner, workers)."""

from __future__ import annotations

import logging
from typing import Annotated

import orjson
import redis
from fastapi import APIRouter, File, Form, Path, Response, UploadFile
from fastapi.responses import FileResponse
from pydantic import ValidationError
from sqlalchemy.orm import Session

from infaas.core.errors import InvalidInput, PayloadTooLarge
from infaas.data import store
from infaas.data.db import AppRow, JobRow, ModelRow, utcnow
from infaas.jobs.protocol import SUBMITTED_KEY
from infaas.jobs.schemas import (
    ChunkDone,
    ChunkDoneResult,
    ChunkRelease,
    ChunkTask,
    Job,
    JobDecision,
    JobError,
    JobsTick,
    JobsTickResult,
    JobSubmit,
)
from services.registry.deps import ArtifactsDep, PrincipalDep, RedisDep, SessionDep, SettingsDep
from services.registry.jobs import service, submit

public = APIRouter(prefix="/v1/jobs")
internal = APIRouter(prefix="/internal/jobs", include_in_schema=False)

ChunkIndex = Annotated[int, Path(ge=0, le=2**31 - 1)]
"""A chunk's index within its job (a 32-bit column): anything else names no chunk."""
router = APIRouter()
log = logging.getLogger("infaas.registry.jobs")


@public.post("", status_code=202, response_model=Job)
def submit_job(
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    artifacts: ArtifactsDep,
    r: RedisDep,
    metadata: Annotated[str, Form(description="JSON `JobSubmit`: {app | model, min_accuracy, …}")],
    input: Annotated[UploadFile | None, File(description="The input: .npy, or .npz with x")] = None,  # noqa: A002
) -> Job:
    try:
        body = JobSubmit.model_validate(orjson.loads(metadata))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise InvalidInput(
            "metadata must be JSON {app | model, min_accuracy?, …}", reason=str(exc)[:300]
        ) from exc
    if (input is None) == (body.input_path is None):
        raise InvalidInput(
            "give the input either as an upload (`input`) or as `input_path`, not both or neither"
        )
    if input is not None:
        limit = settings.job_max_input_bytes
        data = input.file.read(limit + 1)
        if len(data) > limit:
            raise PayloadTooLarge(f"the input is larger than {limit} bytes", limit=limit)
    else:
        assert body.input_path is not None
        data = submit.read_input_path(settings, body.input_path)
    if not data:
        raise InvalidInput("the input is empty")
    row = submit.submit(
        session,
        principal=principal,
        body=body,
        data=data,
        artifacts=artifacts,
        settings=settings,
        live_hardware=submit.live_hardware(r, ttl_s=settings.heartbeat_ttl_s),
    )
    try:  # after the commit: the planner that sees the counter move finds the job in the database
        store.signal(r, SUBMITTED_KEY, store.JOBS_TOPIC)
    except redis.RedisError as exc:  # the job is stored; the planner's idle ask finds it a little later
        log.warning("signalling job %s to the planner failed: %s", row.id, exc)
    return job_views(session, [row])[0]


@public.get("", response_model=list[Job])
def list_jobs(session: SessionDep, principal: PrincipalDep) -> list[Job]:
    return job_views(session, service.jobs_for(session, principal))


@public.get("/{job_id}", response_model=Job)
def get_job(job_id: str, session: SessionDep, principal: PrincipalDep) -> Job:
    return job_views(session, [service.job_for(session, principal, job_id)])[0]


@public.delete("/{job_id}", response_model=Job)
def cancel_job(job_id: str, session: SessionDep, principal: PrincipalDep) -> Job:
    return job_views(session, [service.cancel(session, principal, job_id)])[0]


@public.get("/{job_id}/result", response_class=FileResponse)
def job_result(
    job_id: str, session: SessionDep, principal: PrincipalDep, artifacts: ArtifactsDep
) -> FileResponse:
    path = service.result_path(session, principal, artifacts, job_id)
    return FileResponse(path, media_type="application/octet-stream", filename=f"{job_id}.npz")


@internal.post("/tick", response_model=JobsTickResult)
def tick(body: JobsTick, session: SessionDep) -> JobsTickResult:
    return service.tick(session, body)


@internal.get("/{job_id}/chunks/{index}", response_model=ChunkTask)
def chunk_task(job_id: str, index: ChunkIndex, session: SessionDep) -> ChunkTask:
    return service.chunk_task(session, job_id, index)


@internal.post("/{job_id}/chunks/{index}/done", response_model=ChunkDoneResult)
def chunk_done(
    job_id: str,
    index: ChunkIndex,
    body: ChunkDone,
    session: SessionDep,
    artifacts: ArtifactsDep,
    settings: SettingsDep,
) -> ChunkDoneResult:
    return service.chunk_done(session, artifacts, settings, job_id, index, body)


@internal.post("/{job_id}/chunks/{index}/release", status_code=204)
def chunk_release(job_id: str, index: ChunkIndex, body: ChunkRelease, session: SessionDep) -> Response:
    service.chunk_release(session, job_id, index, body)
    return Response(status_code=204)


def job_views(session: Session, rows: list[JobRow]) -> list[Job]:
    done = service.chunks_done(session, [r.id for r in rows])
    now = utcnow()
    out = []
    for row in rows:
        app = session.get(AppRow, row.app_id)
        model = session.get(ModelRow, row.model_id)
        throughput = eta = None
        if row.started_at is not None and row.rows_done > 0:
            elapsed = ((row.finished_at or now) - row.started_at).total_seconds()
            throughput = row.rows_done / max(elapsed, 1e-3)
            eta = 0.0 if row.state == "succeeded" else (row.rows_total - row.rows_done) / throughput
        out.append(
            Job(
                id=row.id,
                app=app.name if app else "?",
                model=model.name if model else "?",
                variant=row.variant_id,
                state=row.state,
                reason=row.state_reason,
                rows_total=row.rows_total,
                rows_done=row.rows_done,
                chunks_total=row.chunks_total,
                chunks_done=done.get(row.id, 0),
                chunk_rows=row.chunk_rows,
                progress=row.rows_done / row.rows_total if row.rows_total else 0.0,
                throughput_rows_s=throughput,
                eta_s=eta,
                errors=[JobError.model_validate(e) for e in row.errors or []],
                decision=JobDecision.model_validate(row.decision) if row.decision else None,
                input_source=row.input_source,
                output_path=row.output_location,
                result_url=f"/v1/jobs/{row.id}/result" if row.state == "succeeded" else None,
                created_at=row.created_at,
                started_at=row.started_at,
                finished_at=row.finished_at,
            )
        )
    return out


router.include_router(public)
router.include_router(internal)
