"""Leased profiling on real Postgres and Redis: the registry's sweeper profiles again a model whose
profiler lost its lease (after a grace that covers Redis restarted empty), refuses a stale attempt's
reports, gives up after the bounded attempts; `POST /profile` recovers a stuck model and answers 409
while a profiler holds the lease; the profiler's lease keeper re-creates a lease Redis lost; the
sweeper's loop skips its passes while nothing is profiled and the registry's version stays."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import nullcontext
from typing import Any

import orjson
import pytest
import redis
import redis.asyncio as aioredis
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from infaas.clients.profiler import ProfileLease, lease_key, make_celery, take_lease
from infaas.core.config import Settings
from infaas.data.db import EventRow, ModelRow
from infaas.data.registry_version import REGISTRY_VERSION, read_version
from infaas_cli.demo_models import DemoModel
from services.profiler.leases import LeaseKeeper
from services.registry.app import CeleryProfileQueue
from services.registry.profiles.sweeper import FULL_PASS_EVERY_S, ProfileSweeper, recovery_config
from tests.integration.registry.conftest import ADMIN, upload
from tests.polling import wait_for

WORKER = "profiler-cpu@test:1"


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def model(
    registry: TestClient, redis_client: redis.Redis, small_model: DemoModel, db_session: Session
) -> ModelRow:
    """Model `m1` registered (attempt 1 queued in the real broker), the broker queue emptied."""
    assert registry.post("/v1/apps", json={"name": "a1"}, headers=ADMIN).status_code == 201
    files = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes())
    assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202
    assert queued_attempts(redis_client) == [1]
    row = db_session.scalars(select(ModelRow)).one()
    assert (row.profile_attempt, row.profile_tries, row.profile_worker) == (1, 1, None)
    return row


@pytest.fixture
def sweeper(settings: Settings, db_session: Session, redis_client: redis.Redis) -> Iterator[ProfileSweeper]:
    """The registry's sweeper on the test's session (its transaction) and the real broker."""
    queue = CeleryProfileQueue(make_celery(settings.require_redis()))
    config = recovery_config(settings.model_copy(update={"profile_max_attempts": 2}))
    yield ProfileSweeper(lambda: nullcontext(db_session), redis_client, queue, config, clock=Clock())  # type: ignore[arg-type]


def queued_attempts(r: redis.Redis) -> list[int]:
    """The attempts of the profile_model tasks waiting in the broker's profile.cpu list (popped)."""
    attempts = []
    while (raw := r.rpop("profile.cpu")) is not None:
        assert isinstance(raw, bytes)
        attempts.append(orjson.loads(orjson.loads(raw)["headers"]["argsrepr"])[1])
    return attempts


def claim(registry: TestClient, r: redis.Redis, row: ModelRow, attempt: int, worker: str = WORKER) -> Any:
    lease = ProfileLease(model_id=row.id, hardware="cpu", worker=worker, attempt=attempt, since=time.time())
    assert take_lease(r, lease, ttl_s=30) is None
    params = {"attempt": attempt, "hardware": "cpu", "worker": worker}
    return registry.post(f"/internal/models/{row.id}/profile/claim", params=params)


def test_a_lost_lease_is_profiled_again_after_the_grace_and_the_stale_attempt_is_refused(
    registry: TestClient,
    redis_client: redis.Redis,
    db_session: Session,
    model: ModelRow,
    sweeper: ProfileSweeper,
) -> None:
    clock: Clock = sweeper.clock  # type: ignore[assignment]
    assert claim(registry, redis_client, model, 1).status_code == 204
    db_session.refresh(model)
    assert model.profile_worker == WORKER
    assert sweeper.sweep() == []  # the lease is live

    redis_client.delete(lease_key(model.id, "cpu"))  # the profiler died: its lease expired
    assert sweeper.sweep() == []
    clock.now += 4.9
    assert sweeper.sweep() == [], "within the grace"
    clock.now += 0.2
    ((name, decision),) = sweeper.sweep()
    assert (name, decision.action) == ("m1", "requeue")
    assert decision.reason == (
        f"profiler {WORKER} lost the lease of model m1 (attempt 1); profiling again (attempt 2, try 2 of 2)"
    )
    db_session.refresh(model)
    assert (model.status, model.profile_attempt, model.profile_tries) == ("profiling", 2, 2)
    assert model.profile_worker is None
    assert model.status_reason == decision.reason
    assert queued_attempts(redis_client) == [2]
    event = db_session.scalars(select(EventRow).where(EventRow.model == "m1")).one()
    assert (event.kind, event.action, event.outcome, event.reason) == (
        "profiler",
        "reprofile",
        "done",
        decision.reason,
    )

    # The old attempt's task, redelivered later, can neither claim nor report.
    stale = registry.post(
        f"/internal/models/{model.id}/profile/claim", params={"attempt": 1, "hardware": "cpu"}
    )
    assert stale.status_code == 409 and "attempt 1 of model 'm1' is stale" in stale.text
    report = registry.put(f"/internal/models/{model.id}/variants", json=[], params={"attempt": 1})
    assert report.status_code == 409
    status = registry.post(
        f"/internal/models/{model.id}/status", json={"status": "failed"}, params={"attempt": 1}
    )
    assert status.status_code == 409
    db_session.refresh(model)
    assert model.status == "profiling"


def test_redis_restarted_empty_within_the_grace_does_not_profile_twice(
    registry: TestClient,
    redis_client: redis.Redis,
    model: ModelRow,
    sweeper: ProfileSweeper,
) -> None:
    clock: Clock = sweeper.clock  # type: ignore[assignment]
    assert claim(registry, redis_client, model, 1).status_code == 204
    redis_client.flushdb()  # Redis restarted empty
    assert sweeper.sweep() == []
    clock.now += 1.0
    assert claim(registry, redis_client, model, 1).status_code == 204  # the renewal re-created the lease
    clock.now += 10.0
    assert sweeper.sweep() == []
    redis_client.flushdb()
    clock.now += 1.0
    assert sweeper.sweep() == [], "the grace starts over after the lease was seen again"
    assert queued_attempts(redis_client) == []


def test_after_the_last_attempt_is_lost_the_model_fails_with_the_reason(
    registry: TestClient,
    redis_client: redis.Redis,
    db_session: Session,
    model: ModelRow,
    sweeper: ProfileSweeper,
) -> None:
    clock: Clock = sweeper.clock  # type: ignore[assignment]
    for attempt in (1, 2):
        assert claim(registry, redis_client, model, attempt).status_code == 204
        redis_client.delete(lease_key(model.id, "cpu"))
        sweeper.sweep()
        clock.now += 6.0
        ((_, decision),) = sweeper.sweep()
    assert decision.action == "fail"
    db_session.refresh(model)
    assert model.status == "failed"
    assert model.status_reason == (
        f"profiler {WORKER} lost the lease of model m1 (attempt 2); gave up after 2 attempts"
    )
    assert queued_attempts(redis_client) == [2]
    assert registry.get("/v1/models/m1", headers=ADMIN).json()["status_reason"] == model.status_reason


def test_post_profile_answers_409_with_the_holder_and_recovers_a_stuck_model(
    registry: TestClient, redis_client: redis.Redis, db_session: Session, model: ModelRow
) -> None:
    assert claim(registry, redis_client, model, 1).status_code == 204
    busy = registry.post("/v1/models/m1/profile", headers=ADMIN)
    assert busy.status_code == 409, busy.text
    message = busy.json()["error"]["message"]
    assert message.startswith(f"model 'm1' is being profiled by {WORKER} on cpu since ")
    assert message.endswith("(attempt 1)")

    redis_client.delete(lease_key(model.id, "cpu"))  # the profiler is gone
    recovered = registry.post("/v1/models/m1/profile", headers=ADMIN)
    assert recovered.status_code == 202, recovered.text
    body = recovered.json()
    assert body["status"] == "profiling"
    assert body["status_reason"] == (
        f"no profiler holds the lease of model m1 (attempt 1, claimed by {WORKER}); "
        "profiling again as attempt 2"
    )
    assert queued_attempts(redis_client) == [2]
    db_session.refresh(model)
    assert (model.profile_attempt, model.profile_tries) == (2, 1)
    event = db_session.scalars(select(EventRow).where(EventRow.model == "m1")).one()
    assert event.reason == body["status_reason"]


def test_the_lease_keeper_recreates_a_lost_lease_and_yields_to_a_newer_attempt(
    redis_client: redis.Redis,
) -> None:
    lease = ProfileLease(model_id=7, hardware="cpu", worker="a", attempt=1, since=time.time())
    keeper = LeaseKeeper(redis_client, lease, ttl_s=5.0, renew_s=0.02)
    assert keeper.take() is None
    duplicate = ProfileLease(model_id=7, hardware="cpu", worker="b", attempt=1, since=time.time())
    assert take_lease(redis_client, duplicate, ttl_s=5.0) == lease  # a duplicate delivery is refused
    key = lease_key(7, "cpu")
    with keeper:
        redis_client.flushdb()
        wait_for(lambda: redis_client.exists(key), what="the lease re-created after Redis lost it")
        newer = ProfileLease(model_id=7, hardware="cpu", worker="b", attempt=2, since=time.time())
        assert take_lease(redis_client, newer, ttl_s=5.0) is None  # a newer attempt takes it over
        wait_for(lambda: keeper.lost_to == newer, what="the keeper yielding to the newer attempt")
    assert orjson.loads(redis_client.get(key) or b"{}")["worker"] == "b"  # leaving kept the newer lease


@pytest.fixture
async def loop_redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """The asyncio client the sweeper's loop reads the registry version through."""
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


async def test_the_loop_skips_passes_while_nothing_is_profiled_and_the_registry_version_stays(
    registry: TestClient,
    redis_client: redis.Redis,
    loop_redis: aioredis.Redis,
    small_model: DemoModel,
    sweeper: ProfileSweeper,
) -> None:
    """The test's session is not the registry's sessionmaker, so registering here writes no new token:
    what the sweeper sees of the model shows whether a pass ran."""
    clock: Clock = sweeper.clock  # type: ignore[assignment]
    redis_client.set(REGISTRY_VERSION, "t1")
    assert await sweeper.turn(loop_redis) == [] and sweeper.profiling == 0  # a pass: nothing in profiling
    register_m1(registry, redis_client, small_model)
    await sweeper.turn(loop_redis)
    assert sweeper.profiling == 0, "the token did not change: the pass is skipped"
    clock.now += FULL_PASS_EVERY_S
    await sweeper.turn(loop_redis)
    assert sweeper.profiling == 1, "a full pass is due however long the token stays"

    sweeper.profiling = 0  # the token is still t1
    await sweeper.turn(loop_redis)
    assert sweeper.profiling == 1, "while a model is in profiling, every turn is a pass"


def register_m1(registry: TestClient, redis_client: redis.Redis, small_model: DemoModel) -> None:
    """Model `m1` registered through the test's session (no new version token), the broker emptied."""
    assert registry.post("/v1/apps", json={"name": "a1"}, headers=ADMIN).status_code == 201
    files = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes())
    assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202
    queued_attempts(redis_client)


@pytest.mark.parametrize("after", ["t2", None], ids=["a new token", "no token"])
async def test_a_new_registry_version_or_none_means_a_pass(
    registry: TestClient,
    redis_client: redis.Redis,
    loop_redis: aioredis.Redis,
    small_model: DemoModel,
    sweeper: ProfileSweeper,
    after: str | None,
) -> None:
    redis_client.set(REGISTRY_VERSION, "t1")
    await sweeper.turn(loop_redis)
    assert sweeper.profiling == 0
    register_m1(registry, redis_client, small_model)
    if after is None:
        redis_client.delete(REGISTRY_VERSION)  # Redis came back empty: nothing to go by
    else:
        redis_client.set(REGISTRY_VERSION, after)  # what the registry's commit writes
    await sweeper.turn(loop_redis)
    assert sweeper.profiling == 1


async def test_the_loop_reads_the_token_on_its_event_loop_as_the_pass_does(
    redis_url: str, redis_client: redis.Redis, sweeper: ProfileSweeper
) -> None:
    """`due` on the token as the loop reads it: not after an idle pass under it, again on a new one or
    none."""
    redis_client.set(REGISTRY_VERSION, "t1")
    client = aioredis.Redis.from_url(redis_url)
    try:
        token = await read_version(client)
        assert sweeper.due(token)
        sweeper.sweep_under(token)  # nothing in profiling
        assert not sweeper.due(await read_version(client))
        redis_client.set(REGISTRY_VERSION, "t2")
        assert sweeper.due(await read_version(client))
        redis_client.delete(REGISTRY_VERSION)
        assert sweeper.due(await read_version(client))
    finally:
        await client.aclose()
