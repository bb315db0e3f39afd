"""The query routes: one table (`QUERY_ROUTES`), and their handlers — the caller, the target and the body
up to the scheduler's `Query`, and its `Answer` back as `/v1` JSON (`v1_json`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np
import orjson
from fastapi import Request, Response
from starlette.routing import Route

from gateway.dataplane import queries
from gateway.deps import client_address, state_of
from gateway.selection import layer as selection_layer
from gateway.selection.layer import Selected
from gateway.state import GatewayState
from infaas.clients.envelope import Answer, Query
from infaas.core.errors import Unavailable
from infaas.http.app import request_id


async def app_query(
    state: GatewayState, authorization: str | None, client: str | None, app: str, body: bytes, rid: str
) -> Query | Selected:
    """`POST /v1/apps/{app}/infer` up to the scheduler: the caller, the app, the body → a query; or, for
    an app with a selection (`gateway/selection/`), the parsed query for its selection layer."""
    principal = await state.auth.principal(authorization, client)
    target = await state.auth.app(principal, app)
    data, asked = queries.parse_body(body)
    max_rows = state.settings.max_query_rows
    if target.selection.policy != "single" or target.selection.personalize:
        return Selected(target, data["inputs"], asked.requirements, rid, asked.user, max_rows)
    return queries.from_json(target, None, data, asked, request_id=rid, max_rows=max_rows)


async def model_query(
    state: GatewayState, authorization: str | None, client: str | None, name: str, body: bytes, rid: str
) -> Query:
    """`POST /v1/models/{name}/infer` up to the scheduler, like `app_query`."""
    principal = await state.auth.principal(authorization, client)
    model = await state.auth.model(principal, name)
    data, asked = queries.parse_body(body)
    app = await state.auth.app_of(model)
    max_rows = state.settings.max_query_rows
    return queries.from_json(app, model, data, asked, request_id=rid, max_rows=max_rows)


QueryBuilder = Callable[[GatewayState, str | None, str | None, str, bytes, str], Awaitable[Query | Selected]]
"""(state, Authorization header, client address, app or model name, body, request id) → the query."""


async def respond(state: GatewayState, built: Query | Selected) -> bytes:
    """A built query's `/v1` answer document: from the scheduler, or through the app's selection layer."""
    if isinstance(built, Selected):
        if state.selection is None:
            raise Unavailable("model selection needs Redis (INFAAS_REDIS_URL)")
        return await selection_layer.answer(
            built, state.scheduler.infer, state.selection, timeout_s=state.settings.query_timeout_s
        )
    return v1_json(await state.scheduler.infer(built))


def v1_json(answer: Answer) -> bytes:
    """The `/v1` answer (`infaas.schemas.api.InferResponse`), outputs serialized by orjson from the arrays;
    `failover` only when a fallback variant answered."""
    doc: dict[str, object] = {
        "outputs": answer.outputs,
        "model": answer.model,
        "variant": answer.variant,
        "worker": answer.worker,
        "hardware": answer.hardware,
        "latency_ms": {"queue": answer.queue_ms, "compute": answer.compute_ms, "total": answer.total_ms},
        "slo_met": answer.slo_met,
        "cached": answer.cached,
        "default": answer.default,
        "reason": answer.reason,
        "request_id": answer.request_id,
    }
    if answer.failover is not None:
        doc["failover"] = answer.failover
    if answer.reconstructed:
        doc["reconstructed"] = True
    return orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY, default=_as_list)


def _as_list(value: object) -> object:
    """What orjson cannot serialize natively: an array of strings (an app's default output may be text)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class QueryRoute:
    """One query route: the lane matches `/v1/{kind}/<name>/infer`, the app mounts `template`, and the
    documented route (`gateway/v1/infer.py`) declares the same template."""

    kind: str
    template: str
    param: str
    build: QueryBuilder


APP_QUERY = QueryRoute("apps", "/v1/apps/{app}/infer", "app", app_query)
MODEL_QUERY = QueryRoute("models", "/v1/models/{name}/infer", "name", model_query)
QUERY_ROUTES = (APP_QUERY, MODEL_QUERY)
"""The one table of query routes: the lane, `FAST_ROUTES` and the OpenAPI document derive from it."""


async def answer_query(request: Request, route: QueryRoute) -> Response:
    """A query through FastAPI's stack (the served gateway takes it in its query lane first)."""
    state = state_of(request)
    body = await request.body()
    name = request.path_params[route.param]
    authorization = request.headers.get("authorization")
    query = await route.build(state, authorization, client_address(request), name, body, request_id(request))
    return Response(await respond(state, query), status_code=200, media_type="application/json")


def _endpoint(route: QueryRoute) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await answer_query(request, route)

    return endpoint


# Mounted ahead of the documented routes: plain Starlette routes, no dependency solving per query.
FAST_ROUTES = tuple(Route(r.template, _endpoint(r), methods=["POST"]) for r in QUERY_ROUTES)
