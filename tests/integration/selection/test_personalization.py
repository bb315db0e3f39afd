"""Velox heads through the selection layer, on real Postgres (the registry, in-process), real Redis and a
real ONNX Runtime model: tasters who name the wine cultivars their own way (`user_labels`) give feedback;
their personalized answers become right where the bare model is wrong; a new taster starts from the mean
head; the heads survive losing Redis (read back from Postgres)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import numpy as np
import orjson
import pytest
import redis.asyncio as aioredis
from fastapi.testclient import TestClient

from gateway.selection import feedback
from gateway.selection.heads import HeadStore
from gateway.selection.layer import Selected, answer
from gateway.selection.store import SelectionStore
from infaas.clients.registry import AsyncRegistryClient
from infaas.core.config import Settings
from infaas.policy.selection import Requirements
from infaas.schemas.api import AppInternal
from infaas.schemas.selection import FeedbackItem
from tests.integration.registry.conftest import ADMIN, upload
from tests.integration.selection.dispatch import OnnxDispatch
from tests.integration.selection.test_selection_option import validation
from tests.selection_wine import STRONG, user_labels, wine_classifier, wine_data

ROUNDS = 60


@pytest.fixture
async def registry_client(registry: TestClient, settings: Settings) -> AsyncIterator[AsyncRegistryClient]:
    client = AsyncRegistryClient(
        "http://registry", internal_key=settings.internal_key, transport=httpx.ASGITransport(registry.app)
    )
    yield client
    await client.aclose()


def personalized_app(registry: TestClient) -> AppInternal:
    assert registry.post("/v1/apps", json={"name": "cellar"}, headers=ADMIN).status_code == 201
    files = upload(wine_classifier(STRONG), validation(), name="strong", app="cellar")
    assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202
    body = {"selection": {"policy": "single", "models": ["strong"], "personalize": True}}
    assert registry.patch("/v1/apps/cellar", json=body, headers=ADMIN).status_code == 200
    return AppInternal.model_validate(registry.get("/internal/apps/cellar").json())


async def ask(app: AppInternal, row: np.ndarray, rid: str, user: str | None, store: SelectionStore) -> Any:
    selected = Selected(app, row.tolist(), Requirements(), rid, user, 64)
    return orjson.loads(await answer(selected, DISPATCH, store, timeout_s=5))


DISPATCH = OnnxDispatch()


async def test_heads_learn_each_tasters_names_and_survive_losing_redis(
    registry: TestClient, registry_client: AsyncRegistryClient, redis_url: str
) -> None:
    app = personalized_app(registry)
    x, y = wine_data()
    redis = aioredis.Redis.from_url(redis_url)
    store = SelectionStore(redis, HeadStore(redis, registry_client))
    rng = random.Random(5)
    right: dict[str, list[bool]] = {"ana": [], "bo": [], "cy": []}
    bare: dict[str, list[bool]] = {"ana": [], "bo": [], "cy": []}
    n = 0
    for _ in range(ROUNDS):
        for user in right:
            i = rng.randrange(len(y))
            truth = int(user_labels(y[i : i + 1], user)[0])
            doc = await ask(app, x[i : i + 1], f"q{n}", user, store)
            right[user].append(doc["selection"]["labels"][0] == truth)
            own = DISPATCH.sessions["strong"].run(None, {"features": x[i : i + 1]})[0].argmax()
            bare[user].append(int(own) == truth)
            result = await feedback.apply(app, [FeedbackItem(query_id=f"q{n}", labels=[truth])], store)
            assert result.results[0].personalized is not None
            n += 1
    late = {u: float(np.mean(v[-20:])) for u, v in right.items()}
    plain = {u: float(np.mean(v[-20:])) for u, v in bare.items()}
    # the bare model is right for ana only; each taster's head is right for them
    assert plain["bo"] == 0.0 and plain["cy"] < 0.7, plain
    assert all(accuracy >= 0.9 for accuracy in late.values()), late

    # a new taster starts from the mean of the three heads
    doc = await ask(app, x[:1], "new", "dee", store)
    assert doc["selection"]["personalized"]["origin"] == "mean of 3 users"
    # no user: the model's own answer, said so
    doc = await ask(app, x[:1], "anon", None, store)
    assert "no user" in doc["reason"] and doc["selection"]["personalized"] is None

    before = await store.heads.get("cellar", "strong", app.models[0].id, "bo", 3)  # type: ignore[union-attr]
    await redis.flushdb()  # Redis lost: the durable copies stay
    fresh = aioredis.Redis.from_url(redis_url)
    restarted = SelectionStore(fresh, HeadStore(fresh, registry_client))
    after = await restarted.heads.get("cellar", "strong", app.models[0].id, "bo", 3)  # type: ignore[union-attr]
    assert before[1] == "redis" and after[1] == "postgres"
    np.testing.assert_allclose(after[0].weights, before[0].weights)
    i = int(np.flatnonzero(y == 0)[0])
    doc = await ask(app, x[i : i + 1], "again", "bo", restarted)
    assert doc["selection"]["labels"] == [1]  # bo's name for cultivar 0, straight after the restart
    await redis.aclose()
    await fresh.aclose()
