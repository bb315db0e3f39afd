"""The registry's job bookkeeping on real Postgres and Redis: leases, exactly-once chunk completion,
expired leases, pause/resume, assembly in chunk order — and the planner's throttle loop over real
heartbeats in Redis, pausing and resuming a job."""

from __future__ import annotations

import io
import time
from datetime import timedelta
from typing import Any

import httpx
import numpy as np
import orjson
import pytest
import redis
import redis.asyncio as aioredis
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from infaas.core.config import Settings
from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.data.db import AppRow, JobChunkRow, JobRow, ModelRow, VariantRow, utcnow
from infaas.jobs.client import AsyncJobsClient
from infaas.jobs.protocol import THROTTLE_KEY, ThrottleState, npz_bytes
from infaas.jobs.schemas import ChunkDone, ChunkRelease, JobsTick, JobsTickResult
from infaas.policy.selection import WorkerView
from services.planner.loops.jobs import JobsLoop
from services.planner.loops.leader import JOBS_LEADER_KEY, LeaderLock
from services.registry.jobs import service as jobs
from tests.integration.registry.conftest import app_headers

SIGNATURE = {
    "inputs": [{"name": "x", "dtype": "float32", "shape": [None, 4]}],
    "outputs": [{"name": "y", "dtype": "float32", "shape": [None, 2]}],
}


@pytest.fixture
def model(db_session: Session) -> ModelRow:
    app = AppRow(name="a1", slo_policy="best_effort")
    db_session.add(app)
    db_session.flush()
    digest = "0" * 64
    row = ModelRow(name="m1", app_id=app.id, task="classification", format="onnx", status="ready")
    row.artifact_digest = row.validation_digest = digest
    row.size_bytes, row.signature, row.validation_rows = 1, SIGNATURE, 10
    db_session.add(row)
    db_session.flush()
    for vid, qps, acc in (("m1.fast", 4000.0, 0.9), ("m1.slow", 500.0, 0.95)):
        variant = VariantRow(id=vid, model_id=row.id, runtime="onnxruntime", optimization="basic")
        variant.precision, variant.hardware, variant.max_batch, variant.threads = "fp32", "cpu", 8, 1
        variant.artifact_digest, variant.status, variant.accuracy = digest, "ready", acc
        variant.saturation_qps, variant.cost_per_s = qps, 1e-5
        db_session.add(variant)
    db_session.commit()
    return row


def submit(registry: TestClient, x: np.ndarray, **meta: Any) -> dict[str, Any]:
    buffer = io.BytesIO()
    np.save(buffer, x)
    response = registry.post(
        "/v1/jobs",
        headers=app_headers("a1"),
        files={"input": ("x.npy", buffer.getvalue())},
        data={"metadata": orjson.dumps({"model": "m1", "chunk_rows": 4, **meta}).decode()},
    )
    assert response.status_code == 202, response.text
    body: dict[str, Any] = response.json()
    return body


def tick(registry: TestClient, *, paused: bool = False, n: int = 2, lease_s: float = 30) -> dict[str, Any]:
    body = {"paused": paused, "reason": "test", "max_in_flight": n, "lease_s": lease_s}
    response = registry.post("/internal/jobs/tick", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def finish(
    registry: TestClient, settings: Settings, job_id: str, index: int, rows: np.ndarray
) -> dict[str, Any]:
    digest = LocalArtifactStore(settings.resolved_artifact_dir).put(npz_bytes({"y": rows}))
    response = registry.post(
        f"/internal/jobs/{job_id}/chunks/{index}/done",
        json=ChunkDone(output_digest=digest, worker="w").model_dump(),
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


@pytest.mark.usefixtures("model")
def test_chunks_complete_exactly_once_and_assemble_in_order(registry: TestClient, settings: Settings) -> None:
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    job = submit(registry, x)
    assert (job["state"], job["chunks_total"], job["variant"]) == ("queued", 3, "m1.fast")  # most rows per $
    first = tick(registry, n=2)
    assert [c["index"] for c in first["leased"]] == [0, 1] and first["in_flight"] == 2
    assert tick(registry, n=2)["leased"] == []  # both still leased: nothing more in flight
    outputs = {i: np.full((r, 2), i, np.float32) for i, r in ((0, 4), (1, 4), (2, 2))}
    assert finish(registry, settings, job["id"], 1, outputs[1])["newly_done"] is True
    assert finish(registry, settings, job["id"], 1, outputs[1] + 9)["newly_done"] is False  # a duplicate run
    registry.post(
        f"/internal/jobs/{job['id']}/chunks/0/release", json=ChunkRelease(reason="executor gone").model_dump()
    )
    leased = tick(registry, n=2)["leased"]
    assert sorted(c["index"] for c in leased) == [0, 2]
    finish(registry, settings, job["id"], 2, outputs[2])
    result_early = registry.get(f"/v1/jobs/{job['id']}/result", headers=app_headers("a1"))
    assert result_early.status_code == 409  # two of three chunks done: no partial output
    assert finish(registry, settings, job["id"], 0, outputs[0])["job_state"] == "succeeded"
    view = registry.get(f"/v1/jobs/{job['id']}", headers=app_headers("a1")).json()
    assert view["rows_done"] == view["rows_total"] == 10 and view["chunks_done"] == 3
    assert [e["message"] for e in view["errors"]] == ["executor gone"] and not view["errors"][0]["fatal"]
    result = registry.get(f"/v1/jobs/{job['id']}/result", headers=app_headers("a1"))
    with np.load(io.BytesIO(result.content), allow_pickle=False) as archive:
        assert np.array_equal(archive["y"], np.concatenate([outputs[0], outputs[1], outputs[2]]))
    assert registry.get(f"/v1/jobs/{job['id']}", headers=app_headers("other")).status_code == 404


@pytest.mark.usefixtures("model")
def test_an_expired_lease_is_leased_again(registry: TestClient, db_session: Session) -> None:
    job = submit(registry, np.zeros((4, 4), np.float32))
    assert len(tick(registry, n=1, lease_s=30)["leased"]) == 1
    chunk = db_session.get(JobChunkRow, (job["id"], 0))
    assert chunk is not None
    # As if 31 s had passed: the worker that held it died, or its message was lost with Redis.
    result = jobs.tick(
        db_session,
        JobsTick(paused=False, reason="t", max_in_flight=1, lease_s=30),
        now=utcnow() + timedelta(seconds=31),
    )
    assert [c.index for c in result.leased] == [0]
    db_session.refresh(chunk)
    assert chunk.attempts == 2


@pytest.mark.usefixtures("model")
def test_a_fatal_release_fails_the_job_with_the_reason(registry: TestClient) -> None:
    job = submit(registry, np.zeros((4, 4), np.float32))
    tick(registry, n=1)
    registry.post(
        f"/internal/jobs/{job['id']}/chunks/0/release",
        json={"reason": "bad rows", "fatal": True, "quiet": False},
    )
    view = registry.get(f"/v1/jobs/{job['id']}", headers=app_headers("a1")).json()
    assert view["state"] == "failed" and view["reason"] == "chunk 0: bad rows" and view["errors"][0]["fatal"]
    assert registry.get(f"/v1/jobs/{job['id']}/result", headers=app_headers("a1")).status_code == 409


@pytest.mark.usefixtures("model")
def test_paused_jobs_say_why_and_lease_nothing(registry: TestClient) -> None:
    job = submit(registry, np.zeros((8, 4), np.float32))
    assert tick(registry, paused=True)["leased"] == []
    view = registry.get(f"/v1/jobs/{job['id']}", headers=app_headers("a1")).json()
    assert view["state"] == "paused" and view["reason"] == "paused: test"
    assert len(tick(registry, paused=False)["leased"]) == 2
    assert registry.get(f"/v1/jobs/{job['id']}", headers=app_headers("a1")).json()["state"] == "running"


async def _beat(r: aioredis.Redis, utilization: float) -> None:
    worker = WorkerView(
        id="w1",
        hardware="cpu",
        url="http://127.0.0.1:1",
        cores=2,
        memory_bytes=1 << 30,
        memory_used_bytes=0,
        utilization=utilization,
    )
    await store.heartbeat(r, worker=worker, instances={}, now=time.time(), ttl_s=5)


@pytest.mark.usefixtures("model")
async def test_the_planner_loop_pauses_and_resumes_a_job_with_utilization(
    registry: TestClient, settings: Settings, redis_url: str, db_session: Session
) -> None:
    job = submit(registry, np.zeros((8, 4), np.float32))
    sent: list[tuple[str, int]] = []
    r = aioredis.Redis.from_url(redis_url)
    client = AsyncJobsClient(
        "http://registry", internal_key=settings.internal_key, transport=httpx.ASGITransport(app=registry.app)
    )
    loop = JobsLoop(settings, redis=r, jobs=client, send=lambda j, i: sent.append((j, i)))
    try:
        await _beat(r, 0.9)
        decision = await loop.tick()
        assert decision.paused and "online utilization 90% above 40%" in decision.reason
        assert sent == []
        state = ThrottleState.from_json(redis.Redis.from_url(redis_url).get(THROTTLE_KEY))
        assert state.paused and state.eligible == ()
        row = db_session.get(JobRow, job["id"])
        assert row is not None
        db_session.refresh(row)
        assert row.state == "paused" and "90%" in (row.state_reason or "")

        await _beat(r, 0.35)  # below the pause threshold but above the resume one: stays paused
        assert (await loop.tick()).paused and sent == []

        await _beat(r, 0.1)
        decision = await loop.tick()
        assert not decision.paused and decision.eligible == ("w1",)
        assert sent == [(job["id"], 0), (job["id"], 1)]
        db_session.refresh(row)
        assert row.state == "running" and (row.state_reason or "").startswith("running")
    finally:
        await client.aclose()
        await r.aclose()


class CountingJobsClient(AsyncJobsClient):
    """The real client over the real registry app, counting the planner's asks."""

    def __init__(self, registry: TestClient, internal_key: str) -> None:
        transport = httpx.ASGITransport(app=registry.app)
        super().__init__("http://registry", internal_key=internal_key, transport=transport)
        self.asks = 0

    async def tick(self, body: JobsTick) -> JobsTickResult:
        self.asks += 1
        return await super().tick(body)


@pytest.mark.usefixtures("model")
async def test_an_idle_planner_asks_the_registry_only_when_a_job_is_signalled(
    registry: TestClient, settings: Settings, redis_url: str
) -> None:
    now = [0.0]
    sent: list[tuple[str, int]] = []
    r = aioredis.Redis.from_url(redis_url)
    client = CountingJobsClient(registry, settings.internal_key)
    loop = JobsLoop(
        settings, redis=r, jobs=client, send=lambda j, i: sent.append((j, i)), clock=lambda: now[0]
    )
    try:
        await _beat(r, 0.1)
        await loop.tick()  # the first tick always asks: it cannot know what the database holds
        assert client.asks == 1 and loop.active_jobs == 0
        for _ in range(3):
            now[0] += 1.0
            await loop.tick()
        assert client.asks == 1  # nothing active, nothing signalled: no request, no query
        # ...but the throttle is still published every tick, for the jobs workers
        assert ThrottleState.from_json(redis.Redis.from_url(redis_url).get(THROTTLE_KEY)).paused is False

        job = submit(registry, np.zeros((8, 4), np.float32))  # the registry route signals it
        now[0] += 0.5
        await loop.tick()
        assert client.asks == 2 and sent == [(job["id"], 0), (job["id"], 1)]
        now[0] += 0.5
        await loop.tick()  # a job is active: every tick asks (to lease the rest as chunks finish)
        assert client.asks == 3 and loop.active_jobs == 1

        cancelled = registry.delete(f"/v1/jobs/{job['id']}", headers=app_headers("a1"))
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
        now[0] += 0.5
        await loop.tick()
        assert client.asks == 4 and loop.active_jobs == 0
        now[0] += settings.job_idle_tick_s / 2
        await loop.tick()
        assert client.asks == 4
        now[0] += settings.job_idle_tick_s / 2  # a lost signal costs at most job_idle_tick_s
        await loop.tick()
        assert client.asks == 5
    finally:
        await client.aclose()
        await r.aclose()


@pytest.mark.usefixtures("model")
async def test_an_idle_loop_step_reads_one_key_and_decides_nothing_until_a_job_is_signalled(
    registry: TestClient, settings: Settings, redis_url: str
) -> None:
    now = [0.0]
    sent: list[tuple[str, int]] = []
    r = aioredis.Redis.from_url(redis_url)
    sync = redis.Redis.from_url(redis_url)
    client = CountingJobsClient(registry, settings.internal_key)
    lock = LeaderLock(r, key=JOBS_LEADER_KEY, owner="idle-test", lease_s=5.0, clock=lambda: now[0])
    loop = JobsLoop(
        settings, redis=r, jobs=client, send=lambda j, i: sent.append((j, i)), lock=lock, clock=lambda: now[0]
    )
    try:
        await _beat(r, 0.1)
        assert await loop.step() is not None  # the first step decides: nothing is known yet
        assert client.asks == 1 and loop.active_jobs == 0 and loop.decided_at == 0.0
        sync.delete(THROTTLE_KEY, JOBS_LEADER_KEY)
        for _ in range(3):
            now[0] += settings.job_tick_s
            assert await loop.step() is None
        # Idle: no decision, no throttle published, no lease renewed, no request to the registry.
        assert loop.decided_at == 0.0 and client.asks == 1
        assert sync.get(THROTTLE_KEY) is None and sync.get(JOBS_LEADER_KEY) is None

        job = submit(registry, np.zeros((8, 4), np.float32))  # the registry route signals it
        now[0] += settings.job_tick_s
        decision = await loop.step()
        assert decision is not None and not decision.paused
        # The step that leases the job's chunks publishes the throttle first and holds the lease.
        assert sent == [(job["id"], 0), (job["id"], 1)] and client.asks == 2
        assert ThrottleState.from_json(sync.get(THROTTLE_KEY)).paused is False
        assert store.text(sync.get(JOBS_LEADER_KEY) or b"") == "idle-test"
        now[0] += settings.job_tick_s
        assert await loop.step() is not None  # a job is active: every step decides

        cancelled = registry.delete(f"/v1/jobs/{job['id']}", headers=app_headers("a1"))
        assert cancelled.status_code == 200
        now[0] += settings.job_tick_s
        assert await loop.step() is not None and loop.active_jobs == 0
        now[0] += settings.job_idle_tick_s  # idle, but the last ask too old: decide again
        assert await loop.step() is not None and client.asks == 5
    finally:
        await client.aclose()
        await r.aclose()
        sync.close()


async def test_one_planner_at_a_time_runs_the_jobs_loop(redis_url: str) -> None:
    r = aioredis.Redis.from_url(redis_url)
    try:
        first = LeaderLock(r, key=JOBS_LEADER_KEY, owner="p1")
        second = LeaderLock(r, key=JOBS_LEADER_KEY, owner="p2")
        scaling = LeaderLock(r, owner="p2")
        assert await first.hold() and not await second.hold()
        assert await scaling.hold()  # the autoscalers' lease is another key: p2 may lead those
        await first.release()
        assert await second.hold() and not await first.hold()
    finally:
        await r.aclose()


def test_a_model_less_job_runs_on_models_of_one_task(registry: TestClient, db_session: Session) -> None:
    # An app with a classifier and a regression model that take the same inputs: a job that names
    # neither model nor task is a 422 naming both tasks; one that states its task runs on that model.
    app = AppRow(name="a1", slo_policy="best_effort")
    db_session.add(app)
    db_session.flush()
    digest = "0" * 64
    for name, task in (("clf", "classification"), ("reg", "regression")):
        row = ModelRow(name=name, app_id=app.id, task=task, format="onnx", status="ready")
        row.artifact_digest = row.validation_digest = digest
        row.size_bytes, row.signature, row.validation_rows = 1, SIGNATURE, 10
        db_session.add(row)
        db_session.flush()
        variant = VariantRow(id=f"{name}.v", model_id=row.id, runtime="onnxruntime", optimization="basic")
        variant.precision, variant.hardware, variant.max_batch, variant.threads = "fp32", "cpu", 8, 1
        variant.artifact_digest, variant.status, variant.accuracy = digest, "ready", 0.9
        variant.saturation_qps, variant.cost_per_s = 1000.0, 1e-5
        db_session.add(variant)
    db_session.commit()
    buffer = io.BytesIO()
    np.save(buffer, np.zeros((8, 4), dtype=np.float32))

    def post(**meta: Any) -> httpx.Response:
        return registry.post(
            "/v1/jobs",
            headers=app_headers("a1"),
            files={"input": ("x.npy", buffer.getvalue())},
            data={"metadata": orjson.dumps({"app": "a1", "chunk_rows": 4, **meta}).decode()},
        )

    ambiguous = post()
    assert ambiguous.status_code == 422, ambiguous.text
    assert ambiguous.json()["error"]["tasks"] == ["classification", "regression"]
    assert db_session.query(JobRow).count() == 0
    for task, model in (("regression", "reg"), ("classification", "clf")):
        accepted = post(task=task)
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["model"] == model and accepted.json()["variant"] == f"{model}.v"
    named = registry.post(
        "/v1/jobs",
        headers=app_headers("a1"),
        files={"input": ("x.npy", buffer.getvalue())},
        data={"metadata": orjson.dumps({"model": "clf", "task": "regression"}).decode()},
    )
    assert named.status_code == 422 and "is a classification model" in named.json()["error"]["message"]
