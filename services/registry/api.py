"""Registry routes: thin wrappers over `service` (public routes are reached through the gateway)."""

from __future__ import annotations

import time
from typing import Annotated

import orjson
from fastapi import APIRouter, File, Form, Path, Query, Response, UploadFile
from pydantic import ValidationError

from infaas.clients.profiler import PROFILER_TTL_S
from infaas.core.errors import InvalidInput, NotFound, PayloadTooLarge
from infaas.data import store
from infaas.data.db import AppRow
from infaas.schemas.api import (
    App,
    AppCreate,
    AppCreated,
    AppInternal,
    AppUpdate,
    HardwareKind,
    KeyVerify,
    Model,
    ModelAccepted,
    ModelInternal,
    ModelMetadata,
    Principal,
    StatusUpdate,
    Variant,
    VariantFilter,
    VariantReport,
    Worker,
    WorkerRegistration,
)
from infaas.schemas.capacity import CapacityQuery, VariantCapacity
from infaas.schemas.parity import ParityReport, ParityStatus, Redundancy
from infaas.schemas.pipelines import Pipeline, PipelineCreate, PipelinePlan
from infaas.schemas.selection import Selection
from infaas.wire.archives import check_npz_bounds
from services.registry import repository as repo
from services.registry import service, views
from services.registry.deps import (
    ArtifactsDep,
    ParityQueueDep,
    PrincipalDep,
    QueueDep,
    RedisDep,
    SessionDep,
    SettingsDep,
)
from services.registry.parity import publish as parity_publish
from services.registry.parity import training as parity
from services.registry.pipelines import service as pipelines
from services.registry.profiles import attempts as profile_attempts
from services.registry.profiles import reports as profile_reports
from services.registry.variants import capacity
from services.registry.variants import query as variant_query

public = APIRouter(prefix="/v1")
internal = APIRouter(prefix="/internal", include_in_schema=False)


@public.post("/apps", status_code=201, response_model=AppCreated)
def create_app(body: AppCreate, session: SessionDep, principal: PrincipalDep) -> AppCreated:
    row, key = service.create_app(session, principal, body)
    view = views.app_view(row, [], repo.keys_by_app(session).get(row.id, []))
    return AppCreated(**view.model_dump(), api_key=key)


@public.get("/apps", response_model=list[App])
def list_apps(session: SessionDep, principal: PrincipalDep) -> list[App]:
    names = repo.model_names_by_app(session)
    keys = repo.keys_by_app(session)
    return [
        views.app_view(a, names.get(a.id, []), keys.get(a.id, []))
        for a in repo.apps(session)
        if principal.role == "admin" or a.name == principal.app
    ]


@public.get("/apps/{app}", response_model=App)
def get_app(app: str, session: SessionDep, principal: PrincipalDep) -> App:
    row = service.app_for(session, principal, app)
    keys = repo.keys_by_app(session).get(row.id, [])
    return views.app_view(row, repo.model_names_by_app(session).get(row.id, []), keys)


def _read_capped(upload: UploadFile, limit: int, what: str) -> bytes:
    data = upload.file.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"the {what} is larger than {limit} bytes", limit=limit)
    if not data:
        raise InvalidInput(f"the {what} is empty")
    return data


@public.patch("/apps/{app}", response_model=App)
def update_app(
    app: str,
    body: AppUpdate,
    session: SessionDep,
    principal: PrincipalDep,
    artifacts: ArtifactsDep,
    queue: ParityQueueDep,
    r: RedisDep,
) -> App:
    row = service.update_app(session, principal, app, body, artifacts=artifacts, parity_queue=queue, r=r)
    keys = repo.keys_by_app(session).get(row.id, [])
    return views.app_view(row, repo.model_names_by_app(session).get(row.id, []), keys)


@public.post("/models", status_code=202, response_model=ModelAccepted)
def register_model(
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    artifacts: ArtifactsDep,
    queue: QueueDep,
    parity_queue: ParityQueueDep,
    file: Annotated[UploadFile, File(description="The model: an ONNX file.")],
    validation: Annotated[UploadFile, File(description="Validation set: .npz with arrays x and y.")],
    metadata: Annotated[str, Form(description='JSON: {"name", "app", "task"}')],
) -> ModelAccepted:
    try:
        meta = ModelMetadata.model_validate(orjson.loads(metadata))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise InvalidInput("metadata must be JSON {name, app, task}", reason=str(exc)[:300]) from exc
    model_bytes = _read_capped(file, settings.max_model_bytes, "model file")
    validation_bytes = _read_capped(validation, settings.max_model_bytes, "validation file")
    # Before anything decompresses it: a small .npz must not expand into seconds and hundreds of MB.
    check_npz_bounds(
        validation_bytes, max_expanded_bytes=settings.max_validation_expanded_bytes, what="the validation set"
    )
    row = service.register_model(
        session, artifacts, queue, principal, meta, model_bytes, validation_bytes, parity_queue=parity_queue
    )
    (view,) = views.model_views(session, [row])
    return ModelAccepted(**view.model_dump(), status_url=f"/v1/models/{row.name}")


@public.get("/models", response_model=list[Model])
def list_models(session: SessionDep, principal: PrincipalDep) -> list[Model]:
    app_id = None
    if principal.role != "admin":
        app_id = service.app_for(session, principal, principal.app or "").id
    return views.model_views(session, repo.models(session, app_id=app_id))


@public.get("/models/{name}", response_model=Model)
def get_model(name: str, session: SessionDep, principal: PrincipalDep) -> Model:
    return views.model_views(session, [service.model_row(session, principal, name)])[0]


@public.get("/models/{name}/parity", response_model=ParityStatus)
def parity_status(name: str, session: SessionDep, principal: PrincipalDep) -> ParityStatus:
    """The model's parity model: training progress, loss curve and degraded-mode score; 404 without one."""
    return parity.status(session, service.model_row(session, principal, name))


@public.get("/models/{name}/variants", response_model=list[Variant])
def list_variants(
    name: str, session: SessionDep, principal: PrincipalDep, q: Annotated[VariantFilter, Query()]
) -> list[Variant]:
    row = service.model_row(session, principal, name)
    query = variant_query.VariantQuery(**q.model_dump())
    return [views.variant_view(v, name) for v in variant_query.select(repo.variants(session, row.id), query)]


@public.get("/models/{name}/variants/{variant_id}/capacity", response_model=VariantCapacity)
def variant_capacity(
    name: str,
    variant_id: str,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    q: Annotated[CapacityQuery, Query()],
) -> VariantCapacity:
    """Predicted mean latency against arrival rate for each concurrency 1..c (SERF's M/D_interf/c over
    the profiled service rates), beside the measured points; 404 for an unknown model or variant, 409
    while the variant has no concurrency profile."""
    row = service.model_row(session, principal, name)
    variant = next((v for v in repo.variants(session, row.id) if v.id == variant_id), None)
    if variant is None:
        raise NotFound(f"model {name} has no variant {variant_id}")
    return capacity.variant_capacity(variant, name, slo_ms=q.slo_ms, points=q.points, prices=settings.prices)


@public.post("/models/{name}/profile", status_code=202, response_model=Model)
def reprofile(name: str, session: SessionDep, principal: PrincipalDep, queue: QueueDep, r: RedisDep) -> Model:
    """Profile again; a model stuck in profiling (no profiler holds its lease) is queued again, and its
    `status_reason` says so; 409 while a profiler holds the lease."""
    row = service.model_row(session, principal, name)
    profile_attempts.reprofile(session, r, queue, row)
    return views.model_views(session, [row])[0]


@public.get("/hardware", response_model=list[HardwareKind])
def hardware(
    session: SessionDep, principal: PrincipalDep, r: RedisDep, settings: SettingsDep
) -> list[HardwareKind]:
    del principal  # any valid key may see what hardware exists
    return service.hardware_kinds(session, r, settings.prices, now=time.time(), ttl_s=PROFILER_TTL_S)


@public.delete("/models/{name}", status_code=204)
def delete_model(
    name: str, session: SessionDep, principal: PrincipalDep, r: RedisDep, artifacts: ArtifactsDep
) -> Response:
    service.delete_model(session, r, artifacts, principal, name)
    return Response(status_code=204)


@public.post("/pipelines", status_code=201, response_model=Pipeline)
def create_pipeline(
    body: PipelineCreate, session: SessionDep, principal: PrincipalDep, r: RedisDep
) -> Pipeline:
    """Register a pipeline; its graph is checked against the stages' model signatures (422 naming
    the problem, nothing stored)."""
    row = pipelines.create(session, principal, body)
    pipelines.signal_change(r)
    return pipelines.view(session, row)


@public.get("/pipelines", response_model=list[Pipeline])
def list_pipelines(session: SessionDep, principal: PrincipalDep) -> list[Pipeline]:
    return [pipelines.view(session, row) for row in pipelines.rows(session, principal)]


@public.get("/pipelines/{name}", response_model=Pipeline)
def get_pipeline(name: str, session: SessionDep, principal: PrincipalDep) -> Pipeline:
    return pipelines.view(session, pipelines.row_for(session, principal, name))


@public.delete("/pipelines/{name}", status_code=204)
def delete_pipeline(name: str, session: SessionDep, principal: PrincipalDep, r: RedisDep) -> Response:
    pipelines.delete(session, principal, name)
    pipelines.signal_change(r)
    return Response(status_code=204)


@public.get("/workers", response_model=list[Worker])
def list_workers(session: SessionDep, principal: PrincipalDep, r: RedisDep) -> list[Worker]:
    service.require_admin(principal)
    out = []
    for row in repo.workers(session):
        live = r.hgetall(store.worker_key(row.id))
        instances = {
            store.text(k): orjson.loads(v)["state"] for k, v in r.hgetall(store.instances_key(row.id)).items()
        }
        out.append(
            Worker(
                id=row.id,
                hardware=row.hardware,
                url=row.url,
                cores=row.cores,
                memory_bytes=row.memory_bytes,
                registered_at=row.registered_at,
                last_seen_at=row.last_seen_at,
                live=bool(live),
                utilization=float(live[b"utilization"]) if live else None,
                instances=instances,
            )
        )
    return out


@internal.post("/keys/verify", response_model=Principal)
def verify_key(body: KeyVerify, session: SessionDep) -> Principal:
    return service.verify_key(session, body)


@internal.get("/models/{model_id}", response_model=ModelInternal)
def model_internal(model_id: ModelId, session: SessionDep) -> ModelInternal:
    row = repo.model_by_id(session, model_id)
    if row is None:
        raise NotFound(f"no model {model_id}")
    return views.model_internal(row, _app_name(session, row.app_id))


@internal.get("/models/by-name/{name}", response_model=ModelInternal)
def model_by_name(name: str, session: SessionDep) -> ModelInternal:
    row = repo.model_by_name(session, name)
    if row is None:
        raise NotFound(f"no model {name!r}", model=name)
    return views.model_internal(row, _app_name(session, row.app_id))


@internal.get("/pipelines/{name}", response_model=Pipeline)
def pipeline_internal(name: str, session: SessionDep) -> Pipeline:
    return pipelines.view(session, pipelines.internal_row(session, name))


@internal.put("/pipelines/{name}/plan", response_model=Pipeline)
def set_pipeline_plan(name: str, body: PipelinePlan, session: SessionDep, r: RedisDep) -> Pipeline:
    row = pipelines.set_plan(session, name, body)
    pipelines.signal_change(r)
    return pipelines.view(session, row)


@internal.get("/apps/{app}", response_model=AppInternal)
def app_internal(app: str, session: SessionDep) -> AppInternal:
    row = repo.app_by_name(session, app)
    if row is None:
        raise NotFound(f"no app {app!r}", app=app)
    return AppInternal(
        name=row.name,
        default_latency_ms=row.default_latency_ms,
        default_min_accuracy=row.default_min_accuracy,
        slo_policy=row.slo_policy,
        default_output=row.default_output,
        cache=row.cache,
        prefer=row.prefer,
        lossy=row.lossy,
        criticality=row.criticality,
        warm_instances=row.warm_instances,
        redundancy=Redundancy.model_validate(row.redundancy),
        selection=Selection.model_validate(row.selection),
        models=[views.model_internal(m, app) for m in repo.models(session, app_id=row.id)],
    )


@internal.get("/models/{model_id}/variants", response_model=list[VariantReport])
def model_variants_internal(model_id: ModelId, session: SessionDep) -> list[VariantReport]:
    return [views.variant_report(v) for v in repo.variants(session, model_id)]


# Row ids are 32-bit integers in the database: a larger one names no row (404), never a database error.
ModelId = Annotated[int, Path(ge=1, le=2**31 - 1)]

# `attempt`: the profiling attempt the profiler works on; another than the current one is a 409.
AttemptQuery = Annotated[int | None, Query(ge=0, le=2**31 - 1)]
HardwareQuery = Annotated[str, Query(pattern=r"^[a-z0-9]{1,16}$")]
WorkerQuery = Annotated[str | None, Query(min_length=1, max_length=160)]


@internal.post("/models/{model_id}/status", status_code=204)
def set_status(
    model_id: ModelId, body: StatusUpdate, session: SessionDep, attempt: AttemptQuery = None
) -> Response:
    service.set_status(session, model_id, body, attempt=attempt)
    return Response(status_code=204)


@internal.put("/models/{model_id}/variants", status_code=204)
def report_variants(
    model_id: ModelId,
    body: list[VariantReport],
    session: SessionDep,
    r: RedisDep,
    attempt: AttemptQuery = None,
) -> Response:
    profile_reports.report_variants(session, r, model_id, body, attempt=attempt)
    parity_publish.publish(session, r, model_id)  # a parity model trained before its model was profiled
    return Response(status_code=204)


@internal.post("/models/{model_id}/profile/claim", status_code=204)
def claim_profile(
    model_id: ModelId,
    session: SessionDep,
    attempt: Annotated[int, Query(ge=0, le=2**31 - 1)],
    hardware: HardwareQuery,
    worker: WorkerQuery = None,
) -> Response:
    """A profiler takes an attempt (no `worker`: the attempt waits in that hardware's queue); 409 when
    the attempt is stale or over, 404 when the model is gone."""
    profile_attempts.claim(session, model_id, attempt=attempt, hardware=hardware, worker=worker)
    return Response(status_code=204)


@internal.put("/models/{model_id}/parity", status_code=204)
def report_parity(model_id: ModelId, body: ParityReport, session: SessionDep, r: RedisDep) -> Response:
    """A parity training's progress or result (409 from a superseded training); a trained parity model
    is published as its model's hidden parity variant."""
    parity.report(session, model_id, body)
    if body.state == "ready":
        parity_publish.publish(session, r, model_id)
    return Response(status_code=204)


@internal.post("/workers", status_code=204)
def register_worker(body: WorkerRegistration, session: SessionDep) -> Response:
    service.register_worker(session, body)
    return Response(status_code=204)


def _app_name(session: SessionDep, app_id: int) -> str:
    app = session.get(AppRow, app_id)
    return app.name if app else ""
