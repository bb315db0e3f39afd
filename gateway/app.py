"""The gateway: the only public port. Auth, validation, routing, one OpenAPI for the whole system."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from gateway.api import INFER_SCHEMAS, router
from gateway.auth import Authenticator
from gateway.limits import BodyLimit
from gateway.state import GatewayState
from infaas.clients.registry import AsyncRegistryClient
from infaas.clients.scheduler import SchedulerClient
from infaas.config import Settings
from infaas.web import install_common


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        registry = AsyncRegistryClient(settings.service_url("registry"))
        scheduler = SchedulerClient(settings.service_url("scheduler"), timeout_s=settings.query_timeout_s + 5)
        app.state.gateway = GatewayState(
            settings=settings,
            registry=registry,
            scheduler=scheduler,
            auth=Authenticator(registry, ttl_s=settings.auth_cache_ttl_s),
        )
        yield
        await registry.aclose()
        await scheduler.aclose()

    app = FastAPI(
        title="infaas",
        summary="Model-less inference serving: state latency and accuracy, the system does the rest.",
        version="0.1.0",
        lifespan=lifespan,
    )
    install_common(app, service="gateway")
    app.include_router(router)
    app.add_middleware(
        BodyLimit,
        default_limit=settings.max_request_bytes,
        upload_limit=2 * settings.max_model_bytes + (1 << 20),
    )

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            # Query bodies are parsed by hand on the hot path; publish their schema all the same.
            _, defs = models_json_schema(
                [(m, "validation") for m in INFER_SCHEMAS], ref_template="#/components/schemas/{model}"
            )
            schema.setdefault("components", {}).setdefault("schemas", {}).update(defs.get("$defs", {}))
            schema["components"]["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer", "description": "admin or app API key"}
            }
            schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
