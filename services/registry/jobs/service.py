"""Offline jobs, the registry's side after submission (`submit.py`): views, cancel, leases for the
planner, exactly-once chunk completion for the jobs workers, and the assembled result.

Postgres is the source of truth. A chunk is `pending → leased → done` (or `failed`); a lease that
expires (its worker died, its Celery message was lost with Redis) makes the chunk leasable again, and a
chunk finished twice is recorded once, under a lock on its job row. The job's output exists only once
every chunk is done: it is assembled in chunk order in the same transaction that marks the job
`succeeded`, so no partial output is ever presented as complete.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from infaas.core.errors import Conflict, InvalidInput, NotFound
from infaas.core.settings.jobs import JobsSettings
from infaas.data.artifacts import ArtifactStore
from infaas.data.db import AppRow, JobChunkRow, JobRow, ModelRow, utcnow
from infaas.jobs.protocol import npz_bytes, read_npz
from infaas.jobs.schemas import (
    TERMINAL_STATES,
    ChunkDone,
    ChunkDoneResult,
    ChunkRef,
    ChunkRelease,
    ChunkTask,
    JobsTick,
    JobsTickResult,
)
from infaas.schemas.api import Principal

ACTIVE_STATES = ("queued", "running", "paused")
MAX_ERRORS = 20


def inside(root: Path, path: str) -> Path:
    file = (root / path).resolve()
    if not file.is_relative_to(root):
        raise InvalidInput("paths must stay inside the job data store", path=path)
    return file


# --- reading ----------------------------------------------------------------------------------------


def job_for(session: Session, principal: Principal, job_id: str) -> JobRow:
    job = session.get(JobRow, job_id)
    if job is None:
        raise NotFound(f"no job {job_id!r}", job=job_id)
    if principal.role != "admin":
        app = session.get(AppRow, job.app_id)
        if app is None or app.name != principal.app:
            raise NotFound(f"no job {job_id!r}", job=job_id)  # other apps' jobs are not even named
    return job


def jobs_for(session: Session, principal: Principal, *, limit: int = 100) -> list[JobRow]:
    query = select(JobRow).order_by(JobRow.created_at.desc()).limit(limit)
    if principal.role != "admin":
        query = query.join(AppRow, JobRow.app_id == AppRow.id).where(AppRow.name == principal.app)
    return list(session.scalars(query))


def chunks_done(session: Session, job_ids: list[str]) -> dict[str, int]:
    if not job_ids:
        return {}
    rows = session.execute(
        select(JobChunkRow.job_id, func.count())
        .where(JobChunkRow.job_id.in_(job_ids), JobChunkRow.state == "done")
        .group_by(JobChunkRow.job_id)
    )
    return {str(job_id): int(n) for job_id, n in rows}


def result_path(session: Session, principal: Principal, artifacts: ArtifactStore, job_id: str) -> Path:
    job = job_for(session, principal, job_id)
    if job.state != "succeeded" or job.output_digest is None:
        raise Conflict(f"job {job_id} is {job.state}: there is no result", job=job_id, state=job.state)
    return artifacts.path(job.output_digest)


def cancel(session: Session, principal: Principal, job_id: str) -> JobRow:
    job = job_for(session, principal, job_id)
    session.refresh(job, with_for_update=True)
    if job.state in TERMINAL_STATES:
        raise Conflict(f"job {job_id} already {job.state}", job=job_id, state=job.state)
    job.state = "cancelled"
    job.state_reason = (
        f"cancelled by {principal.app or 'the admin'} after {job.rows_done} of {job.rows_total} rows"
    )
    job.finished_at = utcnow()
    session.commit()
    return job


# --- the planner's tick: throttle state and leases --------------------------------------------------


def tick(session: Session, body: JobsTick, *, now: datetime | None = None) -> JobsTickResult:
    """Apply the throttle decision to active jobs and, when not paused, lease chunks up to the limit."""
    now = now or utcnow()
    active = list(session.scalars(select(JobRow).where(JobRow.state.in_(ACTIVE_STATES))))
    for job in active:
        if body.paused and job.state != "paused":
            job.state, job.state_reason = "paused", f"paused: {body.reason}"
        elif not body.paused and job.state == "paused":
            job.state = "running" if job.started_at else "queued"
            job.state_reason = f"resumed: {body.reason}"
    ids = [j.id for j in active]
    live_lease = and_(JobChunkRow.state == "leased", JobChunkRow.leased_until > now)
    in_flight = (
        session.scalar(
            select(func.count()).select_from(JobChunkRow).where(JobChunkRow.job_id.in_(ids), live_lease)
        )
        if ids
        else 0
    ) or 0
    leased: list[ChunkRef] = []
    want = body.max_in_flight - in_flight
    if not body.paused and want > 0 and ids:
        leasable = or_(
            JobChunkRow.state == "pending",
            and_(JobChunkRow.state == "leased", JobChunkRow.leased_until <= now),
        )
        chunks = session.scalars(
            select(JobChunkRow)
            .join(JobRow, JobRow.id == JobChunkRow.job_id)
            .where(JobRow.state.in_(("queued", "running")), leasable)
            .order_by(JobRow.created_at, JobChunkRow.index)
            .limit(want)
            .with_for_update(of=JobChunkRow, skip_locked=True)
        )
        by_id = {j.id: j for j in active}
        for chunk in chunks:
            chunk.state = "leased"
            chunk.leased_until = now + timedelta(seconds=body.lease_s)
            chunk.attempts += 1
            job = by_id[chunk.job_id]
            if job.state == "queued":
                job.state, job.state_reason = "running", "running in spare capacity"
                job.started_at = job.started_at or now
            leased.append(ChunkRef(job_id=chunk.job_id, index=chunk.index))
    session.commit()
    return JobsTickResult(leased=leased, active_jobs=len(active), in_flight=in_flight + len(leased))


# --- the jobs worker: chunk tasks and their outcomes ------------------------------------------------


def chunk_task(session: Session, job_id: str, index: int) -> ChunkTask:
    job, chunk = _job_and_chunk(session, job_id, index)
    model = session.get(ModelRow, job.model_id)
    assert model is not None and job.variant_id is not None
    return ChunkTask(
        job_id=job.id,
        index=chunk.index,
        row_start=chunk.row_start,
        row_end=chunk.row_end,
        state=chunk.state,
        job_state=job.state,
        variant=job.variant_id,
        inputs=dict(job.inputs),
        output_names=[o["name"] for o in model.signature["outputs"]],
    )


def _job_and_chunk(
    session: Session, job_id: str, index: int, *, lock: bool = False
) -> tuple[JobRow, JobChunkRow]:
    job = session.get(JobRow, job_id, with_for_update=lock)
    chunk = session.get(JobChunkRow, (job_id, index))
    if job is None or chunk is None:
        raise NotFound(f"no chunk {index} of job {job_id!r}", job=job_id, chunk=index)
    return job, chunk


def chunk_done(
    session: Session,
    artifacts: ArtifactStore,
    settings: JobsSettings,
    job_id: str,
    index: int,
    body: ChunkDone,
) -> ChunkDoneResult:
    """Record a chunk's output once. The job row is locked, so concurrent completions of its chunks
    serialize and exactly one of them sees the last chunk done and assembles the output."""
    job, chunk = _job_and_chunk(session, job_id, index, lock=True)
    if chunk.state == "done" or job.state in TERMINAL_STATES:
        session.rollback()
        return ChunkDoneResult(newly_done=False, job_state=job.state)
    if not artifacts.exists(body.output_digest):
        raise InvalidInput(f"no artifact {body.output_digest}: store the chunk output first")
    chunk.state, chunk.output_digest, chunk.worker = "done", body.output_digest, body.worker
    chunk.leased_until, chunk.error = None, None
    job.rows_done += chunk.row_end - chunk.row_start
    session.flush()
    remaining = session.scalar(
        select(func.count())
        .select_from(JobChunkRow)
        .where(JobChunkRow.job_id == job_id, JobChunkRow.state != "done")
    )
    if remaining == 0:
        _assemble(session, artifacts, settings, job)
    session.commit()
    return ChunkDoneResult(newly_done=True, job_state=job.state)


def _assemble(session: Session, artifacts: ArtifactStore, settings: JobsSettings, job: JobRow) -> None:
    chunks = session.scalars(
        select(JobChunkRow).where(JobChunkRow.job_id == job.id).order_by(JobChunkRow.index)
    )
    parts: dict[str, list[np.ndarray]] = {}
    for chunk in chunks:
        assert chunk.output_digest is not None
        for name, array in read_npz(artifacts.get(chunk.output_digest)).items():
            parts.setdefault(name, []).append(array)
    outputs = {name: np.concatenate(arrays) for name, arrays in parts.items()}
    bad = {name: a.shape[0] for name, a in outputs.items() if a.shape[0] != job.rows_total}
    if bad or not outputs:
        _fail(job, None, f"assembled output has {bad or 'no'} rows, expected {job.rows_total}: not presented")
        return
    job.output_digest = artifacts.put(npz_bytes(outputs))
    if job.output_location:
        _write_atomically(
            inside(settings.resolved_job_data_dir, job.output_location), artifacts.get(job.output_digest)
        )
    job.state, job.finished_at = "succeeded", utcnow()
    job.state_reason = f"{job.rows_total} rows in {job.chunks_total} chunks"


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def chunk_release(session: Session, job_id: str, index: int, body: ChunkRelease) -> None:
    """Give a chunk back (it runs again later) or, when `fatal`, fail it and its job."""
    job, chunk = _job_and_chunk(session, job_id, index, lock=True)
    if chunk.state == "done" or job.state in TERMINAL_STATES:
        session.rollback()
        return
    chunk.error = body.reason
    if body.fatal:
        chunk.state = "failed"
        _fail(job, index, body.reason)
    else:
        chunk.state, chunk.leased_until = "pending", None
        if not body.quiet:
            _note(job, index, body.reason, fatal=False)
    session.commit()


def _fail(job: JobRow, index: int | None, message: str) -> None:
    job.state, job.finished_at = "failed", utcnow()
    job.state_reason = message if index is None else f"chunk {index}: {message}"
    _note(job, index, message, fatal=True)


def _note(job: JobRow, index: int | None, message: str, *, fatal: bool) -> None:
    entry: dict[str, Any] = {"chunk": index, "message": message, "fatal": fatal, "at": utcnow().isoformat()}
    job.errors = [*(job.errors or [])[-(MAX_ERRORS - 1) :], entry]
