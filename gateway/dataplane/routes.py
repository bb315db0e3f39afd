"""The query routes' handlers: the caller, the target and the body up to a frame for the scheduler, and
the scheduler's answer back; `FAST_ROUTES` mounts them in the app ahead of its documented routes."""

from __future__ import annotations

from fastapi import Request, Response
from starlette.routing import Route

from gateway.dataplane import queries
from gateway.deps import state_of
from gateway.state import GatewayState
from infaas.clients.base import raise_for_error
from infaas.http.app import request_id
from infaas.wire.frames import Message


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
    """The app query through FastAPI's stack (the served gateway takes it in its query lane first)."""
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


FAST_ROUTES = (
    Route("/v1/apps/{app}/infer", query_app, methods=["POST"]),
    Route("/v1/models/{name}/infer", query_model, methods=["POST"]),
)


async def _to_scheduler(request: Request, frame: Message) -> Response:
    upstream = await state_of(request).scheduler.infer(frame, request_id=request_id(request))
    raise_for_error(upstream)
    return Response(upstream.content, status_code=200, media_type="application/json")
