"""Registry service factory: apps, keys, models, variants and workers — the source of truth."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis
import redis.asyncio as aioredis
from celery import Celery
from fastapi import FastAPI

from infaas.clients.profiler import PROFILE_MODEL, TRAIN_PARITY, make_celery, profile_queue
from infaas.core.aio import stop_tasks
from infaas.core.config import Settings
from infaas.core.heap import settle_heap
from infaas.data.artifacts import LocalArtifactStore
from infaas.data.db import make_engine, make_sessionmaker
from infaas.data.registry_version import VersionWriter, track_changes
from infaas.http.app import install_common
from services.registry import service
from services.registry.api import internal, public
from services.registry.artifacts_api import router as artifacts_router
from services.registry.jobs.api import router as jobs_router
from services.registry.profiles.sweeper import ProfileSweeper, recovery_config
from services.registry.selection.heads import router as heads_router
from services.registry.variants import republish


class CeleryProfileQueue:
    """Sends profiling tasks by name to the queue of the hardware kind."""

    def __init__(self, celery: Celery) -> None:
        self.celery = celery

    def enqueue(self, model_id: int, hardware: str, attempt: int) -> None:
        self.celery.send_task(
            PROFILE_MODEL,
            args=[model_id, attempt],
            queue=profile_queue(hardware),
            retry=True,
            retry_policy={"max_retries": 2, "interval_start": 0.2},
        )

    def enqueue_parity(self, model_id: int, k: int, generation: int) -> None:
        """A parity training runs on the CPU profiler's queue: it trains on the CPU, like profiling."""
        self.celery.send_task(
            TRAIN_PARITY,
            args=[model_id, k, generation],
            queue=profile_queue("cpu"),
            retry=True,
            retry_policy={"max_retries": 2, "interval_start": 0.2},
        )


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(settings.resolved_database_url)
        app.state.settings = settings
        app.state.sessionmaker = make_sessionmaker(engine)
        app.state.redis = redis.Redis.from_url(settings.require_redis())
        app.state.artifacts = LocalArtifactStore(settings.resolved_artifact_dir)
        app.state.profile_queue = CeleryProfileQueue(make_celery(settings.require_redis()))
        # Every commit that changes what gateways cache writes a new version token; one at start-up
        # too, in case the registry before this one died between a commit and its token.
        version = VersionWriter(app.state.redis)
        track_changes(app.state.sessionmaker, version)
        with app.state.sessionmaker() as session:
            if settings.admin_key:
                service.ensure_admin_key(session, settings.admin_key)
            republish.republish(session, app.state.redis)
        version.bump()
        # The periodic checks' reads, on the event loop: a thread only for work they find to do.
        checks = aioredis.Redis.from_url(settings.require_redis())
        keeper = asyncio.create_task(
            republish.keep_published(app.state.sessionmaker, app.state.redis, checks, version),
            name="keep-published",
        )
        sweeper = ProfileSweeper(
            app.state.sessionmaker, app.state.redis, app.state.profile_queue, recovery_config(settings)
        )
        sweeping = asyncio.create_task(
            sweeper.run(settings.profile_sweep_interval_s, checks), name="profile-sweeper"
        )
        settle_heap()
        yield
        await stop_tasks(keeper, sweeping)
        await checks.aclose()
        app.state.redis.close()
        engine.dispose()

    app = FastAPI(title="infaas registry", lifespan=lifespan)
    install_common(app, service="registry", internal_key=settings.internal_key)
    app.include_router(public)
    app.include_router(internal)
    app.include_router(artifacts_router)
    app.include_router(heads_router)
    app.include_router(jobs_router)
    return app
