"""The registry's signals to the planner's idle loops, against a real Redis and the real registry app:
each published topic is taken once, everything once per (re)subscription, and an idle jobs loop reads no
key at all until a submission is published."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
import redis
import redis.asyncio as aioredis
from fastapi.testclient import TestClient

from infaas.core.config import Settings
from infaas.data import store
from services.planner.loops.jobs import JobsLoop
from services.planner.signals import Signals
from tests.integration.jobs.test_jobs_registry import (  # noqa: F401 (the fixture)
    CountingJobsClient,
    _beat,
    model,
    submit,
)
from tests.integration.registry.conftest import app_headers


class CountingRedis(aioredis.Redis):
    """The real client, counting its GETs."""

    gets = 0

    async def get(self, name: Any) -> Any:
        self.gets += 1
        return await super().get(name)


async def _until(check: Any, timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "not within the time"
        await asyncio.sleep(0.01)


async def test_each_published_topic_is_taken_once_and_every_topic_once_per_subscription(
    redis_url: str,
) -> None:
    r = aioredis.Redis.from_url(redis_url)
    sync = redis.Redis.from_url(redis_url)
    signals = Signals(r)
    try:
        assert signals.take(store.JOBS_TOPIC)  # not subscribed: anything may have been published
        await signals.start()
        assert signals.subscriptions == 1
        assert signals.take(store.JOBS_TOPIC) and signals.take(store.PIPELINES_TOPIC)  # once after it
        assert not signals.take(store.JOBS_TOPIC) and not signals.take(store.PIPELINES_TOPIC)

        sync.publish(store.PLANNER_SIGNALS, b"\xff\xfe not a topic")  # ignored, and nothing breaks
        sync.publish(store.PLANNER_SIGNALS, "another")
        store.signal(sync, store.PIPELINES_CHANGED, store.PIPELINES_TOPIC)
        await _until(lambda: signals.take(store.PIPELINES_TOPIC))
        assert not signals.take(store.PIPELINES_TOPIC) and not signals.take(store.JOBS_TOPIC)
        assert signals.subscriptions == 1

        sync.client_kill_filter(_type="pubsub")  # the subscription dropped: messages may be lost
        await _until(lambda: signals.subscriptions == 2)
        assert signals.take(store.JOBS_TOPIC) and not signals.take(store.JOBS_TOPIC)
        store.signal(sync, "infaas:test:submitted", store.JOBS_TOPIC)
        await _until(lambda: signals.take(store.JOBS_TOPIC))
    finally:
        await signals.stop()
        await r.aclose()
        sync.close()


@pytest.mark.usefixtures("model")
async def test_an_idle_jobs_loop_with_signals_reads_no_key_until_a_submission_is_published(
    registry: TestClient, settings: Settings, redis_url: str
) -> None:
    now = [0.0]
    sent: list[tuple[str, int]] = []
    r = CountingRedis.from_url(redis_url)
    client = CountingJobsClient(registry, settings.internal_key)
    signals = Signals(r)
    await signals.start()
    loop = JobsLoop(
        settings,
        redis=r,
        jobs=client,
        send=lambda j, i: sent.append((j, i)),
        signals=signals,
        clock=lambda: now[0],
    )
    try:
        await _beat(r, 0.1)
        assert await loop.step() is not None and client.asks == 1  # the first step decides
        now[0] += settings.job_tick_s
        assert await loop.step() is None  # the first idle step reads the counter (new subscription)
        gets = r.gets
        for _ in range(5):
            now[0] += settings.job_tick_s
            assert await loop.step() is None
        assert r.gets == gets and client.asks == 1  # idle: not one key read, no request

        job = submit(registry, np.zeros((8, 4), np.float32))  # the route increments, then publishes

        async def stepped() -> bool:
            now[0] += settings.job_tick_s
            return await loop.step() is not None

        for _ in range(200):  # the message arrives within milliseconds; each step is a tick
            if await stepped():
                break
            await asyncio.sleep(0.01)
        assert sent == [(job["id"], 0), (job["id"], 1)] and client.asks == 2

        cancelled = registry.delete(f"/v1/jobs/{job['id']}", headers=app_headers("a1"))
        assert cancelled.status_code == 200
        now[0] += settings.job_tick_s
        assert await loop.step() is not None and loop.active_jobs == 0
        now[0] += settings.job_idle_tick_s  # a lost message costs at most the idle interval
        assert await loop.step() is not None and client.asks == 4
    finally:
        await signals.stop()
        await client.aclose()
        await r.aclose()
