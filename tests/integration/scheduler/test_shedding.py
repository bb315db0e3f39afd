"""Under overload the scheduler sheds with 429/503 and Retry-After instead of queueing without bound
(a real Redis behind the dispatcher; no executor is needed to be refused)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest
import redis.asyncio as aioredis
from fastapi import FastAPI
from fastapi.testclient import TestClient

from infaas.clients.envelope import Query
from infaas.clients.executor import ExecutorClient
from infaas.core.config import Settings
from infaas.core.errors import Overloaded, TooManyRequests
from infaas.http.app import install_common
from infaas.policy.selection import CandidateIndex, InstanceView, Requirements, Snapshot, WorkerView
from services.scheduler.dispatch import Dispatcher
from services.scheduler.snapshot import SnapshotCache
from tests.factories import variant_profile

VARIANT = variant_profile()  # 100 rows/s at saturation, max batch 4


@pytest.fixture
async def dispatcher(redis_url: str, settings: Settings) -> AsyncIterator[Dispatcher]:
    client = aioredis.Redis.from_url(redis_url)
    snapshot = SnapshotCache(client, ttl_s=5)
    snapshot.by_model = {"m": CandidateIndex([VARIANT])}
    snapshot.snapshot = Snapshot(
        variants={VARIANT.id: VARIANT},
        instances=(InstanceView("w1", VARIANT.id, "active"),),
        workers=(WorkerView("w1", "cpu", "http://127.0.0.1:1", 2, 1 << 30),),
    )
    executors = ExecutorClient(internal_key=settings.internal_key)
    d = Dispatcher(
        redis=client,
        snapshot=snapshot,
        executors=executors,
        settings=settings.model_copy(update={"app_max_pending": 2, "queue_limit_s": 0.5}),
    )
    yield d
    await executors.aclose()
    await client.aclose()


def query(app: str = "a", request_id: str = "r") -> Query:
    x = np.zeros((1, 4), dtype=np.float32)
    return Query("model", "m", "x:float32:4", Requirements(), {"x": x}, request_id, app, cache=False)


async def test_an_app_over_its_in_flight_limit_gets_429(dispatcher: Dispatcher) -> None:
    dispatcher._app_in_flight["a"] = 2  # two queries of app `a` already waiting on workers
    with pytest.raises(TooManyRequests) as info:
        await dispatcher.infer(query("a", "r1"))
    assert info.value.status == 429 and info.value.details["retry_after_s"] == 1


async def test_a_variant_with_a_full_queue_is_shed_with_503(dispatcher: Dispatcher) -> None:
    # 100 rows/s × 0.5 s = 50 rows of queued work is this variant's bound.
    dispatcher._rows_in_flight[VARIANT.id] = 50
    assert dispatcher.saturated() == frozenset({VARIANT.id})
    with pytest.raises(Overloaded) as info:
        await dispatcher.infer(query(request_id="r2"))
    assert info.value.status == 503 and info.value.details["retry_after_s"] == 1
    dispatcher._rows_in_flight[VARIANT.id] = 49
    assert dispatcher.saturated() == frozenset()


def test_shed_errors_carry_retry_after() -> None:
    app = FastAPI()
    install_common(app, service="probe", internal_key=None)

    @app.get("/full")
    async def full() -> None:
        raise Overloaded("queues full", retry_after_s=2.2)

    response = TestClient(app).get("/full")
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "3"
    assert response.json()["error"]["code"] == "overloaded"
