"""The pipeline tuner reads the pipelines only when they may have changed: the registry signals every
committed pipeline write (created, planned, deleted; a refused one is no change) in Redis, and a tuner
with nothing planned makes no request to the registry until that signal moves or its idle re-read
interval passes. Against the real registry app, Postgres and Redis."""

from __future__ import annotations

from typing import Any, cast

import httpx
import redis
import redis.asyncio as aioredis
from fastapi.testclient import TestClient

from infaas.clients.registry import AsyncRegistryClient
from infaas.core.config import Settings
from infaas.data import store
from infaas.data.db import make_engine
from infaas.schemas.api import Principal
from infaas.schemas.pipelines import Pipeline
from services.planner.event_log import EventLog
from services.planner.loops import pipeline_tuner
from services.planner.loops.claims import PipelineClaims
from services.planner.loops.leader import LeaderLock
from services.planner.loops.pipeline_tuner import PipelineTuner
from tests.integration.registry.conftest import app_headers
from tests.integration.registry.test_pipeline_resource import models, spec  # noqa: F401 (the fixture)

PLAN = {
    "stages": [
        {
            "stage": "wine",
            "variant": "wine.v",
            "hardware": "cpu",
            "batch": 1,
            "replicas": 1,
            "scale": 1.0,
            "cost_per_s": 1e-5,
        },
    ],
    "cost_per_s": 1e-5,
    "predicted_p99_ms": 20.0,
    "rate_qps": 10.0,
    "feasible": True,
    "reason": "test plan",
}


def _changes(redis_url: str) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        return int(client.get(store.PIPELINES_CHANGED) or 0)
    finally:
        client.close()


class CountingRegistry(AsyncRegistryClient):
    """The real client over the real registry app, counting the pipeline reads."""

    def __init__(self, registry: TestClient, internal_key: str) -> None:
        super().__init__(
            "http://registry", internal_key=internal_key, transport=httpx.ASGITransport(app=registry.app)
        )
        self.asks = 0

    async def pipelines(self, principal: Principal) -> list[Pipeline]:
        self.asks += 1
        return await super().pipelines(principal)


def test_every_committed_pipeline_write_moves_the_signal_and_a_refused_one_does_not(
    models: TestClient,  # noqa: F811 (the fixture)
    redis_url: str,
) -> None:
    before = _changes(redis_url)
    assert models.post("/v1/pipelines", json=spec(), headers=app_headers("cellar")).status_code == 201
    assert _changes(redis_url) == before + 1
    refused = models.post("/v1/pipelines", json=spec(name="blend", edges=[]), headers=app_headers("cellar"))
    assert refused.status_code == 422 and _changes(redis_url) == before + 1
    assert models.put("/internal/pipelines/tasting/plan", json=PLAN).status_code == 200
    assert _changes(redis_url) == before + 2
    assert models.delete("/v1/pipelines/tasting", headers=app_headers("cellar")).status_code == 204
    assert _changes(redis_url) == before + 3


async def test_an_idle_tuner_reads_the_pipelines_only_after_a_change_or_its_idle_interval(
    models: TestClient,  # noqa: F811 (the fixture)
    redis_url: str,
    settings: Settings,
) -> None:
    r = aioredis.Redis.from_url(redis_url)
    registry = CountingRegistry(models, internal_key=settings.internal_key)
    claims = PipelineClaims(registry, max_age_s=5.0)
    engine = make_engine(settings.resolved_database_url)
    events = EventLog(engine)
    clock = [1000.0]
    tuner = PipelineTuner(
        redis=r,
        lock=LeaderLock(r, owner="tuner-test"),
        registry=registry,
        # Only a planned pipeline's actions use the executors; none is carried out here.
        executors=cast(Any, None),
        events=events,
        heartbeat_ttl_s=5.0,
        claims=claims,
        clock=lambda: clock[0],
    )
    try:
        await tuner.tick()
        assert registry.asks == 1 and claims.by_model == {}
        for _ in range(5):
            clock[0] += 1.0
            assert await tuner.tick() == []
        assert registry.asks == 1  # nothing planned, nothing signalled: one Redis read a tick
        assert claims.at > 0  # ... and the claims confirmed current, so the autoscaler reads nothing

        assert models.post("/v1/pipelines", json=spec(), headers=app_headers("cellar")).status_code == 201
        clock[0] += 1.0
        await tuner.tick()
        assert registry.asks == 2  # the signal moved: read again
        clock[0] += 1.0
        await tuner.tick()
        assert registry.asks == 2  # stored but not planned: idle again

        clock[0] += pipeline_tuner.IDLE_READ_S  # a lost signal costs at most the idle interval
        await tuner.tick()
        assert registry.asks == 3

        assert models.put("/internal/pipelines/tasting/plan", json=PLAN).status_code == 200
        for _ in range(2):  # planned: every tick reads (the stage's variant is unknown: nothing to tune)
            clock[0] += 1.0
            await tuner.tick()
        assert registry.asks == 5 and set(claims.by_model) == {"wine"}
        # ... and the plan that cannot be tuned is said once, with the variant it waits for.
        held = [e for e in await events.list() if e.kind == "pipeline_planner"]
        assert [(e.action, e.outcome) for e in held] == [("hold", "decided")], held
        assert "wine.v no longer published" in held[0].reason and "pipeline tasting" in held[0].reason
    finally:
        engine.dispose()
        await registry.aclose()
        await r.aclose()
