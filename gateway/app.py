"""The gateway: the only public port. Auth, validation, routing, one OpenAPI for the whole system."""

from __future__ import annotations

import hmac
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as aioredis
from fastapi import FastAPI, Request, Response
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic.json_schema import models_json_schema
from starlette.types import ASGIApp

from gateway.auth import Authenticator
from gateway.auth_headers import AuthHeaders
from gateway.dataplane.lane import QueryLane
from gateway.dataplane.routes import FAST_ROUTES
from gateway.deps import AuthHeader, StateDep, client_address
from gateway.limits import BodyLimit
from gateway.oip.routes import router as oip_router
from gateway.oip.schemas import OIP_SCHEMAS
from gateway.selection.heads import HeadStore
from gateway.selection.store import SelectionStore
from gateway.state import GatewayState
from gateway.ui import router as ui_router
from gateway.ui.data import load_sampler
from gateway.ui.sessions import SessionStore
from gateway.v1 import apps, events, feedback, infer, jobs, models, pipelines, workers
from infaas.clients.registry import AsyncRegistryClient
from infaas.clients.scheduler import QueryDispatch, SchedulerClient
from infaas.core.config import Settings
from infaas.core.errors import Forbidden
from infaas.core.heap import settle_heap
from infaas.data.registry_version import read_version
from infaas.http.app import install_common
from infaas.metrics.buffer import flushing
from infaas.metrics.exposition import CONTENT_TYPE, exposition


def serve_app(
    settings: Settings, *, embedded_scheduler: Callable[[Settings], QueryDispatch] | None = None
) -> ASGIApp:
    """What the ASGI server runs: the app behind the query lane (`gateway/dataplane/lane.py`)."""
    app = create_app(settings, embedded_scheduler=embedded_scheduler)
    # The server runs it with its proxy-headers middleware off (infaas_cli/main.py): the lane applies it to
    # what it passes to the app, with uvicorn's own default of trusted proxies.
    trusted = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
    return QueryLane(app, max_body_bytes=settings.max_request_bytes, forwarded_allow_ips=trusted)


def _admin_only_metrics(app: FastAPI) -> None:
    """`/metrics` of the public port answers the admin key only: its series name apps, models and
    variants and their rates, which no app key and no stranger may read. Prometheus sends the key as
    a bearer token (deploy/grafana/README.md); the configured admin key is checked here first, so a
    scrape does not depend on the registry being up."""
    app.router.routes[:] = [
        r for r in app.router.routes if not (isinstance(r, APIRoute) and r.path == "/metrics")
    ]

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request, state: StateDep, authorization: AuthHeader = None) -> Response:
        scheme, _, given = (authorization or "").partition(" ")
        admin_key = state.settings.admin_key.encode()
        if not (
            admin_key
            and scheme.lower() == "bearer"
            and hmac.compare_digest(given.strip().encode(), admin_key)
        ):
            # 401 without a known key
            principal = await state.auth.principal(authorization, client_address(request))
            if principal.role != "admin":
                raise Forbidden("the gateway's metrics are for the admin key only")
        return Response(exposition(), media_type=CONTENT_TYPE)  # all processes of this gateway


def create_app(
    settings: Settings, *, embedded_scheduler: Callable[[Settings], QueryDispatch] | None = None
) -> FastAPI:
    """`embedded_scheduler` builds the scheduler's dispatcher inside this process (the composition
    root passes it when `scheduler_mode` is `embedded`); without it queries go to the scheduler service."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        registry = AsyncRegistryClient(settings.service_url("registry"), internal_key=settings.internal_key)
        scheduler: QueryDispatch
        if embedded_scheduler is not None:
            scheduler = embedded_scheduler(settings)
        else:
            scheduler = SchedulerClient(
                settings.service_url("scheduler"),
                internal_key=settings.internal_key,
                timeout_s=settings.query_timeout_s + 5,
            )
        await scheduler.start()
        app.state.gateway = _gateway_state(settings, registry, scheduler)
        selection = app.state.gateway.selection
        # The admin UI's sessions; without Redis the UI says it cannot sign anyone in.
        sessions = (
            SessionStore(settings.redis_url, ttl_s=settings.ui_session_ttl_s) if settings.redis_url else None
        )
        app.state.ui_sessions = sessions
        app.state.ui_load = load_sampler(app.state.gateway)
        app.state.ui_load.start()
        settle_heap()
        async with flushing():
            yield
        await app.state.ui_load.stop()
        await app.state.gateway.auth.aclose()
        oip_kinds = getattr(app.state, "oip_kinds", None)  # made by the first OIP query, if any
        if oip_kinds is not None:
            await oip_kinds.aclose()
        await registry.aclose()
        await scheduler.aclose()
        if selection is not None:
            await selection.redis.aclose()
        if sessions is not None:
            await sessions.aclose()

    app = FastAPI(
        title="infaas",
        summary="Model-less inference serving: state latency and accuracy, the system does the rest.",
        version="0.1.0",
        lifespan=lifespan,
        # Operation ids are the route functions' names: they name the generated SDK's functions.
        generate_unique_id_function=lambda route: route.name,
    )
    install_common(app, service="gateway", internal_key=None)  # public: keys, not the internal key
    _admin_only_metrics(app)
    app.router.routes.extend(FAST_ROUTES)  # matched before the documented query routes below
    # In this order: the OpenAPI document (and so the generated SDK) lists the paths as included.
    for v1 in (apps, feedback, models, workers, infer, pipelines, events):
        app.include_router(v1.router)
    app.include_router(ui_router)  # the admin web UI at /ui
    app.include_router(oip_router)  # Open Inference Protocol v2 at /v2
    app.include_router(jobs.router)  # offline jobs at /v1/jobs
    app.add_middleware(
        BodyLimit,
        default_limit=settings.max_request_bytes,
        upload_limit=2 * settings.max_model_bytes + (1 << 20),
    )
    app.add_middleware(AuthHeaders)  # WWW-Authenticate on 401, x-infaas-stale-auth (gateway/auth_headers.py)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = openapi_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _gateway_state(
    settings: Settings, registry: AsyncRegistryClient, scheduler: QueryDispatch
) -> GatewayState:
    # The selection layer's state (gateway/selection/store.py); apps without a selection never touch it.
    redis_url = settings.redis_url
    selection_redis = aioredis.Redis.from_url(redis_url) if redis_url else None
    selection = (
        SelectionStore(selection_redis, HeadStore(selection_redis, registry))
        if selection_redis is not None
        else None
    )
    return GatewayState(
        settings=settings,
        registry=registry,
        scheduler=scheduler,
        auth=Authenticator(
            registry,
            ttl_s=settings.auth_cache_ttl_s,
            failures_per_minute=settings.auth_failures_per_minute,
            stale_max_s=settings.auth_stale_max_s,
            keep_warm_s=settings.auth_cache_keep_warm_s,
            revalidate=(lambda: read_version(selection_redis)) if selection_redis is not None else None,
        ),
        selection=selection,
    )


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The gateway's OpenAPI document: its routes, and the query bodies' schemas, which the hot path
    parses by hand (`infaas.clients.envelope.QUERY_FIELDS`) but the document publishes all the same."""
    schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
    _, defs = models_json_schema(
        [(m, "validation") for m in (*infer.INFER_SCHEMAS, *OIP_SCHEMAS)],
        ref_template="#/components/schemas/{model}",
    )
    schema.setdefault("components", {}).setdefault("schemas", {}).update(defs.get("$defs", {}))
    for body in schema["components"]["schemas"].values():
        for part in body.get("properties", {}).values():
            if part.get("contentMediaType") == "application/octet-stream":
                part["format"] = "binary"  # how SDK generators recognise an uploaded file
    schema["components"]["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "description": "admin or app API key"}
    }
    schema["security"] = [{"bearer": []}]
    return schema
