"""Public routes. Registry resources pass through (with the caller's identity); queries are validated
here and handed to the scheduler as binary frames."""

from __future__ import annotations

from typing import Annotated, Any

import httpx
from fastapi import APIRouter, File, Form, Header, Query, Request, Response, UploadFile
from starlette.routing import Route

from gateway import queries
from gateway.state import GatewayState
from infaas.clients.base import principal_headers, raise_for_error, unavailable
from infaas.core.errors import PayloadTooLarge
from infaas.http.app import request_id
from infaas.schemas.api import (
    App,
    AppCreate,
    AppCreated,
    AppUpdate,
    ErrorBody,
    HardwareKind,
    InferRequest,
    InferResponse,
    Model,
    ModelAccepted,
    Principal,
    Variant,
    VariantFilter,
    Worker,
)
from infaas.wire.frames import Message

router = APIRouter(prefix="/v1")

AuthHeader = Annotated[str | None, Header(alias="Authorization", include_in_schema=False)]

_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorBody, "description": d}
    for s, d in (
        (401, "missing or unknown API key"),
        (403, "the key belongs to another app"),
        (404, "unknown app or model"),
        (413, "body too large"),
        (422, "invalid input"),
    )
}
_INFER_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InferRequest"}}},
    }
}


def _state(request: Request) -> GatewayState:
    state: GatewayState = request.app.state.gateway
    return state


async def _forward(request: Request, principal: Principal, method: str, path: str, **kwargs: Any) -> Response:
    """Pass a registry route through, errors included, without re-serializing the body."""
    http = _state(request).registry.http
    headers = principal_headers(principal) | {"x-request-id": request_id(request)}
    try:
        upstream = await http.request(method, path, headers=headers, **kwargs)
    except httpx.HTTPError as exc:
        raise unavailable("registry", exc) from exc
    raise_for_error(upstream)
    return Response(
        upstream.content, status_code=upstream.status_code, media_type=upstream.headers.get("content-type")
    )


@router.post("/apps", status_code=201, response_model=AppCreated, responses=_ERRORS)
async def create_app(body: AppCreate, request: Request, authorization: AuthHeader = None) -> Response:
    """Create an app (admin key). The answer holds the app's API key, shown only this once."""
    principal = await _state(request).auth.principal(authorization)
    return await _forward(request, principal, "POST", "/v1/apps", json=body.model_dump())


@router.get("/apps", response_model=list[App], responses=_ERRORS)
async def list_apps(request: Request, authorization: AuthHeader = None) -> Response:
    principal = await _state(request).auth.principal(authorization)
    return await _forward(request, principal, "GET", "/v1/apps")


@router.get("/apps/{app}", response_model=App, responses=_ERRORS)
async def get_app(app: str, request: Request, authorization: AuthHeader = None) -> Response:
    principal = await _state(request).auth.principal(authorization)
    return await _forward(request, principal, "GET", f"/v1/apps/{app}")


@router.patch("/apps/{app}", response_model=App, responses=_ERRORS)
async def update_app(
    app: str, body: AppUpdate, request: Request, authorization: AuthHeader = None
) -> Response:
    """Change an app's default requirements, SLO-miss policy, cache and cost/latency preference."""
    state = _state(request)
    principal = await state.auth.principal(authorization)
    response = await _forward(
        request, principal, "PATCH", f"/v1/apps/{app}", json=body.model_dump(exclude_unset=True)
    )
    state.auth.apps.drop(app)  # this gateway applies the change at once; others within the cache TTL
    return response


@router.post("/models", status_code=202, response_model=ModelAccepted, responses=_ERRORS)
async def register_model(
    request: Request,
    file: Annotated[UploadFile, File(description="The model: an ONNX file.")],
    validation: Annotated[UploadFile, File(description="Validation set: .npz with arrays x and y.")],
    metadata: Annotated[str, Form(description='JSON: {"name", "app", "task"}')],
    authorization: AuthHeader = None,
) -> Response:
    """Register a model; profiling starts at once. Poll `status_url` for `ready` or `failed`."""
    state = _state(request)
    principal = await state.auth.principal(authorization)
    limit = state.settings.max_model_bytes
    parts = {}
    for field, upload in (("file", file), ("validation", validation)):
        if upload.size is not None and upload.size > limit:
            raise PayloadTooLarge(f"the {field} is larger than {limit} bytes", limit=limit)
        parts[field] = (upload.filename or field, await upload.read(), "application/octet-stream")
    response = await _forward(
        request, principal, "POST", "/v1/models", files=parts, data={"metadata": metadata}
    )
    return response


@router.get("/models", response_model=list[Model], responses=_ERRORS)
async def list_models(request: Request, authorization: AuthHeader = None) -> Response:
    principal = await _state(request).auth.principal(authorization)
    return await _forward(request, principal, "GET", "/v1/models")


@router.get("/models/{name}", response_model=Model, responses=_ERRORS)
async def get_model(name: str, request: Request, authorization: AuthHeader = None) -> Response:
    principal = await _state(request).auth.principal(authorization)
    return await _forward(request, principal, "GET", f"/v1/models/{name}")


@router.get("/models/{name}/variants", response_model=list[Variant], responses=_ERRORS)
async def list_variants(
    name: str, request: Request, q: Annotated[VariantFilter, Query()], authorization: AuthHeader = None
) -> Response:
    """The model's variants with their profiles: filter by hardware, status, precision, accuracy,
    latency at a batch size and cost; sort by latency (at `batch`), accuracy, cost, throughput,
    memory or load time. Dominated variants are marked `dominated` (kept, skipped by selection)."""
    principal = await _state(request).auth.principal(authorization)
    params = q.model_dump(exclude_defaults=True)
    return await _forward(request, principal, "GET", f"/v1/models/{name}/variants", params=params)


@router.post("/models/{name}/profile", status_code=202, response_model=Model, responses=_ERRORS)
async def reprofile(name: str, request: Request, authorization: AuthHeader = None) -> Response:
    """Profile the model again (e.g. after hardware was added); 409 while a profile is running."""
    principal = await _state(request).auth.principal(authorization)
    return await _forward(request, principal, "POST", f"/v1/models/{name}/profile")


@router.get("/hardware", response_model=list[HardwareKind], responses=_ERRORS)
async def hardware(request: Request, authorization: AuthHeader = None) -> Response:
    """Hardware kinds: which are available here, and why the others are not."""
    principal = await _state(request).auth.principal(authorization)
    return await _forward(request, principal, "GET", "/v1/hardware")


@router.delete("/models/{name}", status_code=204, responses=_ERRORS)
async def delete_model(name: str, request: Request, authorization: AuthHeader = None) -> Response:
    state = _state(request)
    principal = await state.auth.principal(authorization)
    response = await _forward(request, principal, "DELETE", f"/v1/models/{name}")
    state.auth.forget_model(name, principal.app)
    return response


@router.get("/workers", response_model=list[Worker], responses=_ERRORS)
async def list_workers(request: Request, authorization: AuthHeader = None) -> Response:
    """Registered workers, whether they are live, and the state of their instances (admin key)."""
    principal = await _state(request).auth.principal(authorization)
    return await _forward(request, principal, "GET", "/v1/workers")


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
    state = _state(request)
    body = await request.body()
    auth = request.headers.get("authorization")
    frame = await app_query_frame(state, auth, request.path_params["app"], body)
    return await _to_scheduler(request, frame)


async def query_model(request: Request) -> Response:
    """The model query through FastAPI's stack, like `query_app`."""
    state = _state(request)
    body = await request.body()
    name = request.path_params["name"]
    frame = await model_query_frame(state, request.headers.get("authorization"), name, body)
    return await _to_scheduler(request, frame)


# The two query routes as the API documents them. The app serves them through `FAST_ROUTES` (same
# functions, matched first); these stay for the OpenAPI schema and the generated SDKs.
@router.post("/apps/{app}/infer", response_model=InferResponse, responses=_ERRORS, openapi_extra=_INFER_BODY)
async def infer_app(app: str, request: Request, authorization: AuthHeader = None) -> Response:  # noqa: ARG001
    """Model-less query: state the requirements, the system picks the variant and the worker."""
    return await query_app(request)


@router.post(
    "/models/{name}/infer", response_model=InferResponse, responses=_ERRORS, openapi_extra=_INFER_BODY
)
async def infer_model(name: str, request: Request, authorization: AuthHeader = None) -> Response:  # noqa: ARG001
    """Query a named model; the system still picks its variant and worker."""
    return await query_model(request)


FAST_ROUTES = (
    Route("/v1/apps/{app}/infer", query_app, methods=["POST"]),
    Route("/v1/models/{name}/infer", query_model, methods=["POST"]),
)


async def _to_scheduler(request: Request, frame: Message) -> Response:
    upstream = await _state(request).scheduler.infer(frame, request_id=request_id(request))
    raise_for_error(upstream)
    return Response(upstream.content, status_code=200, media_type="application/json")


INFER_SCHEMAS = (InferRequest,)
