"""Scheduler service: per-query variant selection and dispatch (reached only through the gateway)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
from fastapi import APIRouter, FastAPI, Request, Response

from infaas.clients.executor import ExecutorClient
from infaas.config import Settings
from infaas.errors import InfaasError
from infaas.web import install_common, request_id
from services.scheduler import metrics
from services.scheduler.dispatch import Dispatcher
from services.scheduler.snapshot import SnapshotCache

router = APIRouter(include_in_schema=False)


async def infer(request: Request) -> Response:
    """The hot route, mounted as a plain Starlette route: no dependency solving or response model,
    which FastAPI would run for every query (errors still go through the shared handlers)."""
    dispatcher: Dispatcher = request.app.state.dispatcher
    start = time.perf_counter()
    outcome = "ok"
    try:
        body = await dispatcher.infer(await request.body(), request_id(request))
        return Response(body, media_type="application/json")
    except InfaasError as exc:
        outcome = exc.code
        raise
    finally:
        metrics.REQUEST_SECONDS.labels(outcome).observe(time.perf_counter() - start)


@router.get("/internal/snapshot")
async def snapshot(request: Request) -> dict[str, object]:
    """What the scheduler currently believes (for debugging and tests)."""
    snap = request.app.state.snapshot.snapshot
    return {
        "variants": sorted(snap.variants),
        "workers": [w.id for w in snap.workers],
        "instances": [
            {"worker": i.worker_id, "variant": i.variant_id, "state": i.state} for i in snap.instances
        ],
    }


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = aioredis.Redis.from_url(settings.require_redis())
        snapshot = SnapshotCache(redis, ttl_s=settings.heartbeat_ttl_s)
        executors = ExecutorClient()
        dispatcher = Dispatcher(redis=redis, snapshot=snapshot, executors=executors, settings=settings)
        await snapshot.start()
        await dispatcher.start()
        app.state.snapshot = snapshot
        app.state.dispatcher = dispatcher
        yield
        await dispatcher.stop()
        await snapshot.stop()
        await executors.aclose()
        await redis.aclose()

    app = FastAPI(title="infaas scheduler", lifespan=lifespan)
    install_common(app, service="scheduler")
    app.include_router(router)
    app.add_route("/internal/infer", infer, methods=["POST"], include_in_schema=False)
    return app
