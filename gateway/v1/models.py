"""`/v1/models`: register, list, show, profile again and delete models, and list their variants (passed
through to the registry; a model upload is size-checked here first)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile

from gateway.deps import NamePath, PrincipalDep, StateDep
from gateway.v1.passthrough import ERRORS, forward
from infaas.clients.base import segment
from infaas.core.errors import PayloadTooLarge
from infaas.schemas.api import Model, ModelAccepted, Variant, VariantFilter
from infaas.schemas.capacity import CapacityQuery, VariantCapacity
from infaas.schemas.parity import ParityStatus

router = APIRouter(prefix="/v1")


@router.post("/models", status_code=202, response_model=ModelAccepted, responses=ERRORS)
async def register_model(
    request: Request,
    file: Annotated[UploadFile, File(description="The model: an ONNX file.")],
    validation: Annotated[UploadFile, File(description="Validation set: .npz with arrays x and y.")],
    metadata: Annotated[str, Form(description='JSON: {"name", "app", "task"}')],
    state: StateDep,
    principal: PrincipalDep,
) -> Response:
    """Register a model; profiling starts at once. Poll `status_url` for `ready` or `failed`."""
    limit = state.settings.max_model_bytes
    parts = {}
    for field, upload in (("file", file), ("validation", validation)):
        if upload.size is not None and upload.size > limit:
            raise PayloadTooLarge(f"the {field} is larger than {limit} bytes", limit=limit)
        parts[field] = (upload.filename or field, await upload.read(), "application/octet-stream")
    response = await forward(
        request, principal, "POST", "/v1/models", files=parts, data={"metadata": metadata}
    )
    return response


@router.get("/models", response_model=list[Model], responses=ERRORS)
async def list_models(request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", "/v1/models")


@router.get("/models/{name}", response_model=Model, responses=ERRORS)
async def get_model(name: NamePath, request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", f"/v1/models/{segment(name)}")


@router.get("/models/{name}/variants", response_model=list[Variant], responses=ERRORS)
async def list_variants(
    name: NamePath, request: Request, q: Annotated[VariantFilter, Query()], principal: PrincipalDep
) -> Response:
    """The model's variants with their profiles: filter by hardware, status, precision, accuracy,
    latency at a batch size and cost; sort by latency (at `batch`), accuracy, cost, throughput,
    memory or load time. Dominated variants are marked `dominated` (kept, skipped by selection)."""
    params = q.model_dump(exclude_defaults=True)
    return await forward(request, principal, "GET", f"/v1/models/{segment(name)}/variants", params=params)


@router.get("/models/{name}/variants/{variant_id}/capacity", response_model=VariantCapacity, responses=ERRORS)
async def variant_capacity(
    name: NamePath,
    variant_id: str,
    request: Request,
    q: Annotated[CapacityQuery, Query()],
    principal: PrincipalDep,
) -> Response:
    """Predicted mean latency against arrival rate for each concurrency 1..c the variant was profiled
    at (SERF's M/D_interf/c model over its measured service rates μ_i), beside the measured points;
    with `slo_ms`, the highest rate each configuration carries within it. 404 for an unknown model or
    variant, 409 while the variant is not profiled."""
    params = q.model_dump(exclude_defaults=True)
    path = f"/v1/models/{segment(name)}/variants/{segment(variant_id)}/capacity"
    return await forward(request, principal, "GET", path, params=params)


@router.get("/models/{name}/parity", response_model=ParityStatus, responses=ERRORS)
async def parity_status(name: NamePath, request: Request, principal: PrincipalDep) -> Response:
    """The model's parity model (its app's redundancy is `parity`): training progress, loss curve, and
    degraded-mode accuracy (of outputs reconstructed from it, on held-out validation rows); 404 without."""
    return await forward(request, principal, "GET", f"/v1/models/{segment(name)}/parity")


@router.post("/models/{name}/profile", status_code=202, response_model=Model, responses=ERRORS)
async def reprofile(name: NamePath, request: Request, principal: PrincipalDep) -> Response:
    """Profile the model again (e.g. after hardware was added); 409 while a profile is running."""
    return await forward(request, principal, "POST", f"/v1/models/{segment(name)}/profile")


@router.delete("/models/{name}", status_code=204, responses=ERRORS)
async def delete_model(
    name: NamePath, request: Request, state: StateDep, principal: PrincipalDep
) -> Response:
    response = await forward(request, principal, "DELETE", f"/v1/models/{segment(name)}")
    state.auth.forget_model(name, principal.app)
    return response
