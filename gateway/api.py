"""Public routes. Registry resources pass through (with the caller's identity); queries are validated
here and handed to the scheduler as binary frames."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile
from starlette.routing import Route

from gateway import queries
from gateway.deps import AuthHeader, PrincipalDep, StateDep, state_of
from gateway.passthrough import ERRORS, forward
from gateway.state import GatewayState
from infaas.clients.base import raise_for_error
from infaas.core.errors import PayloadTooLarge
from infaas.http.app import request_id
from infaas.schemas.api import (
    App,
    AppCreate,
    AppCreated,
    AppUpdate,
    HardwareKind,
    InferRequest,
    InferResponse,
    Model,
    ModelAccepted,
    Variant,
    VariantFilter,
    Worker,
)
from infaas.wire.frames import Message

router = APIRouter(prefix="/v1")


_INFER_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InferRequest"}}},
    }
}


@router.post("/apps", status_code=201, response_model=AppCreated, responses=ERRORS)
async def create_app(body: AppCreate, request: Request, principal: PrincipalDep) -> Response:
    """Create an app (admin key). The answer holds the app's API key, shown only this once."""
    return await forward(request, principal, "POST", "/v1/apps", json=body.model_dump())


@router.get("/apps", response_model=list[App], responses=ERRORS)
async def list_apps(request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", "/v1/apps")


@router.get("/apps/{app}", response_model=App, responses=ERRORS)
async def get_app(app: str, request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", f"/v1/apps/{app}")


@router.patch("/apps/{app}", response_model=App, responses=ERRORS)
async def update_app(
    app: str, body: AppUpdate, request: Request, state: StateDep, principal: PrincipalDep
) -> Response:
    """Change an app's default requirements, SLO-miss policy, cache and cost/latency preference."""
    response = await forward(
        request, principal, "PATCH", f"/v1/apps/{app}", json=body.model_dump(exclude_unset=True)
    )
    state.auth.apps.drop(app)  # this gateway applies the change at once; others within the cache TTL
    return response


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
async def get_model(name: str, request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", f"/v1/models/{name}")


@router.get("/models/{name}/variants", response_model=list[Variant], responses=ERRORS)
async def list_variants(
    name: str, request: Request, q: Annotated[VariantFilter, Query()], principal: PrincipalDep
) -> Response:
    """The model's variants with their profiles: filter by hardware, status, precision, accuracy,
    latency at a batch size and cost; sort by latency (at `batch`), accuracy, cost, throughput,
    memory or load time. Dominated variants are marked `dominated` (kept, skipped by selection)."""
    params = q.model_dump(exclude_defaults=True)
    return await forward(request, principal, "GET", f"/v1/models/{name}/variants", params=params)


@router.post("/models/{name}/profile", status_code=202, response_model=Model, responses=ERRORS)
async def reprofile(name: str, request: Request, principal: PrincipalDep) -> Response:
    """Profile the model again (e.g. after hardware was added); 409 while a profile is running."""
    return await forward(request, principal, "POST", f"/v1/models/{name}/profile")


@router.get("/hardware", response_model=list[HardwareKind], responses=ERRORS)
async def hardware(request: Request, principal: PrincipalDep) -> Response:
    """Hardware kinds: which are available here, and why the others are not."""
    return await forward(request, principal, "GET", "/v1/hardware")


@router.delete("/models/{name}", status_code=204, responses=ERRORS)
async def delete_model(name: str, request: Request, state: StateDep, principal: PrincipalDep) -> Response:
    response = await forward(request, principal, "DELETE", f"/v1/models/{name}")
    state.auth.forget_model(name, principal.app)
    return response


@router.get("/workers", response_model=list[Worker], responses=ERRORS)
async def list_workers(request: Request, principal: PrincipalDep) -> Response:
    """Registered workers, whether they are live, and the state of their instances (admin key)."""
    return await forward(request, principal, "GET", "/v1/workers")


async def app_query_frame(state: GatewayState, authorization: str | None, app: str, body: bytes) -> Message:
    """`POST /v1/apps/{app}/infer` up to the scheduler: the caller, the app, the body → a query frame."""
    principal = await state.auth.principal(authorization)
    target = await state.auth.app(principal, app)
    data = queries.parse_body(body)
    return queries.app_frame(target, data, max_rows=state.settings.max_query_rows)


async def model_query_frame(
    state: GatewayState, authorization: str | None, name: str, body: bytes
) -> Message:
    """`POST /v1/models/{name}/infer` up to the scheduler, like `app_query_frame`."""
    principal = await state.auth.principal(authorization)
    model = await state.auth.model(principal, name)
    data = queries.parse_body(body)
    app = await state.auth.app_of(model)
    return queries.model_frame(model, app, data, max_rows=state.settings.max_query_rows)


async def query_app(request: Request) -> Response:
    """The app query through FastAPI's stack (the served gateway takes it in `gateway.lane` first)."""
    state = state_of(request)
    body = await request.body()
    auth = request.headers.get("authorization")
    frame = await app_query_frame(state, auth, request.path_params["app"], body)
    return await _to_scheduler(request, frame)


async def query_model(request: Request) -> Response:
    """The model query through FastAPI's stack, like `query_app`."""
    state = state_of(request)
    body = await request.body()
    name = request.path_params["name"]
    frame = await model_query_frame(state, request.headers.get("authorization"), name, body)
    return await _to_scheduler(request, frame)


# The two query routes as the API documents them. The app serves them through `FAST_ROUTES` (same
# functions, matched first); these stay for the OpenAPI schema and the generated SDKs.
@router.post("/apps/{app}/infer", response_model=InferResponse, responses=ERRORS, openapi_extra=_INFER_BODY)
async def infer_app(app: str, request: Request, authorization: AuthHeader = None) -> Response:  # noqa: ARG001
    """Model-less query: state the requirements, the system picks the variant and the worker."""
    return await query_app(request)


@router.post(
    "/models/{name}/infer", response_model=InferResponse, responses=ERRORS, openapi_extra=_INFER_BODY
)
async def infer_model(name: str, request: Request, authorization: AuthHeader = None) -> Response:  # noqa: ARG001
    """Query a named model; the system still picks its variant and worker."""
    return await query_model(request)


FAST_ROUTES = (
    Route("/v1/apps/{app}/infer", query_app, methods=["POST"]),
    Route("/v1/models/{name}/infer", query_model, methods=["POST"]),
)


async def _to_scheduler(request: Request, frame: Message) -> Response:
    upstream = await state_of(request).scheduler.infer(frame, request_id=request_id(request))
    raise_for_error(upstream)
    return Response(upstream.content, status_code=200, media_type="application/json")


INFER_SCHEMAS = (InferRequest,)
