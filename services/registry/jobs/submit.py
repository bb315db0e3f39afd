"""Offline jobs, submission: validate everything (model, input, requirements, output path), choose the
variant for throughput per cost, store the inputs, split into chunks — in that order, so a refused job
leaves nothing behind."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import redis
from sqlalchemy.orm import Session

from infaas.core.errors import Conflict, InvalidInput, NotFound, RequirementsUnmet
from infaas.core.settings.jobs import JobsSettings
from infaas.core.tasks import one_task
from infaas.data import store
from infaas.data.artifacts import ArtifactStore
from infaas.data.db import AppRow, JobChunkRow, JobRow, ModelRow
from infaas.jobs.protocol import auto_chunk_rows, chunk_plan, npy_bytes, parse_job_input
from infaas.jobs.schemas import JobDecision, JobSubmit
from infaas.jobs.variants import JobCandidate, JobChoice, choose_job_variant
from infaas.schemas.api import Principal
from infaas.wire.tensors import Signature
from services.registry import repository as repo
from services.registry import service
from services.registry.jobs.service import inside


def submit(
    session: Session,
    *,
    principal: Principal,
    body: JobSubmit,
    data: bytes,
    artifacts: ArtifactStore,
    settings: JobsSettings,
    live_hardware: frozenset[str] | None,
) -> JobRow:
    """Validate everything first (model, input, requirements, output path); only then store and insert."""
    models, app = _candidate_models(session, principal, body)
    fitting, parsed = _parse_input(models, data, settings)
    pick = _choose_variant(session, app, models, fitting, body, live_hardware)
    chosen = pick.choice.variant
    output_file = _output_file(settings, body.output_path)
    rows = next(iter(parsed.values())).shape[0]
    chunk_rows = body.chunk_rows or auto_chunk_rows(
        throughput_rows_s=chosen.saturation_qps,
        max_batch=chosen.max_batch,
        target_s=settings.job_chunk_seconds,
        cap=max(chosen.max_batch, 100_000),
    )
    inputs = {name: artifacts.put(npy_bytes(array)) for name, array in parsed.items()}
    plan = chunk_plan(rows, chunk_rows)
    job = JobRow(
        id=uuid.uuid4().hex,
        app_id=app.id,
        model_id=pick.model.id,
        variant_id=chosen.id,
        state="queued",
        state_reason="waiting for spare capacity",
        min_accuracy=pick.min_accuracy,
        decision=_decision(pick).model_dump(),
        inputs=inputs,
        input_source=body.input_path or "upload",
        output_location=str(output_file.relative_to(settings.resolved_job_data_dir)) if output_file else None,
        rows_total=rows,
        rows_done=0,
        chunk_rows=chunk_rows,
        chunks_total=len(plan),
        errors=[],
    )
    session.add(job)
    session.flush()
    session.add_all(
        JobChunkRow(job_id=job.id, index=i, row_start=a, row_end=b, state="pending", attempts=0)
        for i, (a, b) in enumerate(plan)
    )
    session.commit()
    return job


@dataclass(frozen=True, slots=True)
class _Pick:
    """The variant a job runs on, the model it belongs to, and the accuracy terms it was chosen under."""

    model: ModelRow
    choice: JobChoice
    min_accuracy: float | None
    at_reference: bool


def _parse_input(
    models: list[ModelRow], data: bytes, settings: JobsSettings
) -> tuple[ModelRow, dict[str, np.ndarray]]:
    """The first model whose signature the input fits, and the input parsed for it; else the first
    model's refusal."""
    first_error: InvalidInput | None = None
    for candidate in models:  # a model-less job runs on the app's models whose signature fits the input
        try:
            parsed = parse_job_input(
                data,
                Signature.from_json(candidate.signature),
                max_rows=settings.job_max_rows,
                max_bytes=settings.job_max_input_bytes,
            )
        except InvalidInput as exc:
            first_error = first_error or exc
            continue
        return candidate, parsed
    assert first_error is not None
    raise first_error


def _choose_variant(
    session: Session,
    app: AppRow,
    models: list[ModelRow],
    fitting: ModelRow,
    body: JobSubmit,
    live_hardware: frozenset[str] | None,
) -> _Pick:
    """Among the models with `fitting`'s signature, the variant with the most rows per dollar."""
    # As a model-less query: the models of one task only (infaas.core.tasks).
    same_inputs = [m for m in models if m.signature == fitting.signature]
    task = one_task(app.name, (m.task for m in same_inputs), body.task)
    of_task = [m for m in same_inputs if m.task == task]
    min_accuracy = body.min_accuracy if body.min_accuracy is not None else app.default_min_accuracy
    # As for queries (gateway/dataplane/queries.py): a job that states no accuracy runs only on variants
    # as accurate as the registered model, unless the app allows lossy ones.
    at_reference = min_accuracy is None and not app.lossy
    choice = choose_job_variant(
        [c for m in of_task for c in _candidates(session, m, at_reference=at_reference)],
        min_accuracy=min_accuracy,
        hardware=live_hardware,
    )
    model = next(m for m in of_task if m.name == choice.variant.model)
    return _Pick(model=model, choice=choice, min_accuracy=min_accuracy, at_reference=at_reference)


def _decision(pick: _Pick) -> JobDecision:
    """What the job records of its variant choice, and why."""
    chosen = pick.choice.variant
    lossless = " (only variants as accurate as the registered model: the app is not lossy)"
    return JobDecision(
        variant=chosen.id,
        model=chosen.model,
        accuracy=chosen.accuracy,
        throughput_rows_s=chosen.saturation_qps,
        cost_per_million_rows=1e6 * chosen.cost_per_s / chosen.saturation_qps,
        max_batch=chosen.max_batch,
        reason=pick.choice.reason + (lossless if pick.at_reference else ""),
        considered=pick.choice.considered,
    )


def read_input_path(settings: JobsSettings, path: str) -> bytes:
    file = inside(settings.resolved_job_data_dir, path)
    if not file.is_file():
        raise NotFound(f"no input {path!r} in the job data store", input_path=path)
    size = file.stat().st_size
    if size > settings.job_max_input_bytes:
        raise InvalidInput(f"the input is {size} bytes; at most {settings.job_max_input_bytes}")
    return file.read_bytes()


def _output_file(settings: JobsSettings, path: str | None) -> Path | None:
    if path is None:
        return None
    file = inside(settings.resolved_job_data_dir, path)
    if file.exists():
        raise Conflict(f"output {path!r} already exists; jobs never overwrite", output_path=path)
    return file


def _candidate_models(
    session: Session, principal: Principal, body: JobSubmit
) -> tuple[list[ModelRow], AppRow]:
    if body.model:
        model = service.model_row(session, principal, body.model)
        app = session.get(AppRow, model.app_id)
        assert app is not None
        if body.app and body.app != app.name:
            raise InvalidInput(f"model {model.name!r} belongs to app {app.name!r}, not {body.app!r}")
        if model.status != "ready":
            raise Conflict(
                f"model {model.name!r} is {model.status}, not ready", model=model.name, status=model.status
            )
        if body.task is not None and body.task != model.task:
            raise InvalidInput(f"model {model.name!r} is a {model.task} model", field="task", task=model.task)
        return [model], app
    assert body.app is not None
    app = service.app_for(session, principal, body.app)
    ready = [
        m for m in repo.models(session, app_id=app.id) if m.status == "ready" and body.task in (None, m.task)
    ]
    if not ready:
        which = f"{body.task} model" if body.task else "model"
        raise RequirementsUnmet(f"app {app.name!r} has no ready {which}", app=app.name)
    return ready, app


def _candidates(session: Session, model: ModelRow, *, at_reference: bool) -> list[JobCandidate]:
    floor = model.reference_accuracy if at_reference else None
    return [
        JobCandidate(
            id=v.id,
            model=model.name,
            accuracy=v.accuracy or 0.0,
            saturation_qps=v.saturation_qps or 0.0,
            cost_per_s=v.cost_per_s or 0.0,
            max_batch=v.max_batch,
            hardware=v.hardware,
        )
        for v in repo.variants(session, model.id)
        if v.status == "ready" and (floor is None or (v.accuracy or 0.0) >= floor)
    ]


def live_hardware(r: redis.Redis, *, ttl_s: float) -> frozenset[str] | None:
    """Hardware kinds of live workers; None when none is live (the job then waits for one)."""
    ids = [store.text(m) for m in r.zrangebyscore(store.WORKERS, time.time() - ttl_s, "+inf")]
    kinds = {store.text(h) for wid in ids if (h := r.hget(store.worker_key(wid), "hardware"))}
    return frozenset(kinds) or None
