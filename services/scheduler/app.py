"""Scheduler service: per-query variant selection and dispatch (reached only through the gateway)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
from fastapi import APIRouter, FastAPI, Request, Response

from infaas.clients.envelope import FRAME_TYPE, Answer, Query
from infaas.clients.executor import ExecutorClient
from infaas.core.config import Settings
from infaas.core.errors import InfaasError
from infaas.core.heap import settle_heap
from infaas.http.app import install_common
from infaas.metrics.buffer import BUFFER, flushing
from infaas.policy.selection import USABLE_STATES
from services.scheduler import metrics
from services.scheduler.dispatch import Dispatcher
from services.scheduler.snapshot import SnapshotCache

router = APIRouter(include_in_schema=False)


class EmbeddedScheduler:
    """The scheduler's dispatcher and snapshot, run inside another process (the gateway).

    Each gateway process then decides and enqueues itself: the query skips one HTTP hop (a request
    encode, a loopback round trip and a parse on each side). Dispatchers share nothing but Redis, so
    several gateways each embedding one are as safe as several scheduler replicas.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.redis = aioredis.Redis.from_url(settings.require_redis())
        self.snapshot = SnapshotCache(self.redis, ttl_s=settings.heartbeat_ttl_s)
        self.executors = ExecutorClient(internal_key=settings.internal_key)
        self.dispatcher = Dispatcher(
            redis=self.redis, snapshot=self.snapshot, executors=self.executors, settings=settings
        )

    async def start(self) -> None:
        await self.snapshot.start()
        await self.dispatcher.start()

    async def infer(self, query: Query) -> Answer:
        return await dispatch(self.dispatcher, query)

    def serving(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for instance in self.snapshot.snapshot.instances:
            if instance.state in USABLE_STATES:
                counts[instance.variant_id] = counts.get(instance.variant_id, 0) + 1
        return counts

    async def aclose(self) -> None:
        await self.dispatcher.stop()
        await self.snapshot.stop()
        await self.executors.aclose()
        await self.redis.aclose()


async def dispatch(dispatcher: Dispatcher, query: Query) -> Answer:
    """One query through the dispatcher, timed by outcome."""
    start = time.perf_counter()
    outcome = "ok"
    try:
        return await dispatcher.infer(query)
    except InfaasError as exc:
        outcome = exc.code
        raise
    finally:
        seconds = metrics.REQUEST_OK if outcome == "ok" else metrics.REQUEST_SECONDS.labels(outcome)
        BUFFER.observe(seconds, time.perf_counter() - start)


async def infer(request: Request) -> Response:
    """The hot route, mounted as a plain Starlette route: no dependency solving or response model,
    which FastAPI would run for every query (errors still go through the shared handlers). The query
    and its answer travel as frames (`infaas.clients.envelope`)."""
    answer = await dispatch(request.app.state.dispatcher, Query.decode(await request.body()))
    return Response(answer.encode(), media_type=FRAME_TYPE)


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
        scheduler = EmbeddedScheduler(settings)
        await scheduler.start()
        app.state.snapshot = scheduler.snapshot
        app.state.dispatcher = scheduler.dispatcher
        settle_heap()
        async with flushing():
            yield
        await scheduler.aclose()

    app = FastAPI(title="infaas scheduler", lifespan=lifespan)
    install_common(app, service="scheduler", internal_key=settings.internal_key)
    app.include_router(router)
    app.add_route("/internal/infer", infer, methods=["POST"], include_in_schema=False)
    return app
