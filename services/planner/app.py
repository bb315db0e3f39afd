"""Planner service factory: the control loops (`loops/`) running the pure policies (`policies/`) for the
app's lifetime, and their internal routes (`api.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
from fastapi import FastAPI

from infaas.core.config import Settings
from infaas.core.heap import settle_heap
from infaas.http.app import install_common
from services.planner.api import router
from services.planner.failure_watch import FailureWatch
from services.planner.loops.startup import start_loops


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.redis = aioredis.Redis.from_url(settings.require_redis())
        stop_loops = await start_loops(app, settings)
        watch = FailureWatch(
            app.state.redis,
            getattr(app.state, "events", None),
            interval_s=settings.pulse_interval_s,
            misses=settings.pulse_misses,
            hung_s=settings.pulse_hung_s,
            key=settings.internal_key,
            host=settings.host,
            port=settings.planner_port,
            advertise_host=settings.pulse_host(),
        )
        await watch.start()
        app.state.failure_watch = watch
        settle_heap()
        yield
        await watch.stop()
        await stop_loops()
        await app.state.redis.aclose()

    app = FastAPI(title="infaas planner", lifespan=lifespan)
    install_common(app, service="planner", internal_key=settings.internal_key)
    app.include_router(router)
    return app
