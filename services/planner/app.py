"""Planner service. Its control loops (autoscaling, offline throttle, failover, pipelines) arrive with
their issues; today it runs, reports health and metrics, and sees the workers' heartbeats."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
from fastapi import FastAPI, Request
from prometheus_client import Gauge

from infaas.core.config import Settings
from infaas.data import store
from infaas.http.app import install_common
from services.planner import autoscaling
from services.planner.jobs_loop import jobs_router

LIVE_WORKERS = Gauge(
    "infaas_planner_live_workers", "Workers with a fresh heartbeat", multiprocess_mode="livemax"
)


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.redis = aioredis.Redis.from_url(settings.require_redis())
        stop_autoscaling = await autoscaling.start_autoscaling(app, settings)
        yield
        await stop_autoscaling()
        await app.state.redis.aclose()

    app = FastAPI(title="infaas planner", lifespan=lifespan)
    install_common(app, service="planner")
    app.include_router(jobs_router(settings))
    app.include_router(autoscaling.router)

    @app.get("/internal/cluster", include_in_schema=False)
    async def cluster(request: Request) -> dict[str, object]:
        """The live workers and instances the planner would plan over."""
        workers, instances = await store.read_live(
            request.app.state.redis, now=time.time(), ttl_s=settings.heartbeat_ttl_s
        )
        LIVE_WORKERS.set(len(workers))
        return {
            "workers": [w.id for w in workers],
            "instances": [
                {"worker": i.worker_id, "variant": i.variant_id, "state": i.state} for i in instances
            ],
        }

    return app
