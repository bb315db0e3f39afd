"""The query routes: one table (`QUERY_ROUTES`), and their handlers — the caller, the target and the body
up to a frame for the scheduler, and the scheduler's answer back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

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


FrameBuilder = Callable[[GatewayState, str | None, str, bytes], Awaitable[Message]]


@dataclass(frozen=True, slots=True)
class QueryRoute:
    """One query route: the lane matches `/v1/{kind}/<name>/infer`, the app mounts `template`, and the
    documented route (`gateway/v1/infer.py`) declares the same template."""

    kind: str
    template: str
    param: str
    build: FrameBuilder


APP_QUERY = QueryRoute("apps", "/v1/apps/{app}/infer", "app", app_query_frame)
MODEL_QUERY = QueryRoute("models", "/v1/models/{name}/infer", "name", model_query_frame)
QUERY_ROUTES = (APP_QUERY, MODEL_QUERY)
"""The one table of query routes: the lane, `FAST_ROUTES` and the OpenAPI document derive from it."""


async def answer_query(request: Request, route: QueryRoute) -> Response:
    """A query through FastAPI's stack (the served gateway takes it in its query lane first)."""
    state = state_of(request)
    body = await request.body()
    name = request.path_params[route.param]
    frame = await route.build(state, request.headers.get("authorization"), name, body)
    upstream = await state.scheduler.infer(frame, request_id=request_id(request))
    raise_for_error(upstream)
    return Response(upstream.content, status_code=200, media_type="application/json")


def _endpoint(route: QueryRoute) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await answer_query(request, route)

    return endpoint


# Mounted ahead of the documented routes: plain Starlette routes, no dependency solving per query.
FAST_ROUTES = tuple(Route(r.template, _endpoint(r), methods=["POST"]) for r in QUERY_ROUTES)
