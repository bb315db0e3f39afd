"""The worker autoscaler with the local-process provider on a real cluster: a requested worker starts
(with its own CPU affinity), an idle one it owns is drained and stopped, the launcher's own executors
are never touched, and draining a worker that is serving loses no query."""

from __future__ import annotations

import asyncio
import os
import time

import redis
import redis.asyncio as aioredis
from sqlalchemy import delete

from infaas.clients.executor import ExecutorClient
from infaas.data import store
from infaas.data.db import EventRow, make_engine
from services.planner.event_log import EventLog
from services.planner.loops.leader import LeaderLock
from services.planner.loops.model_autoscaler import WorkerRequests
from services.planner.loops.worker_autoscaler import WorkerAutoscaler
from services.planner.policies.worker_pool import WorkerConfig
from services.planner.providers.local import LocalProcessProvider
from tests.integration.planner.conftest import Cluster, QuerySource
from tests.polling import async_wait_for


def _live(url: str) -> set[str]:
    client = redis.Redis.from_url(url)
    try:
        return {store.text(w) for w in client.zrangebyscore(store.WORKERS, time.time() - 3, "+inf")}
    finally:
        client.close()


def _served_by(queries: QuerySource) -> set[str]:
    return {a.worker for a in queries.answers.values()}


async def test_a_requested_worker_starts_and_goes_again_once_idle(cluster: Cluster, redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    engine = make_engine(cluster.settings.resolved_database_url)
    with engine.begin() as conn:
        conn.execute(delete(EventRow))
    events = EventLog(engine)
    provider = LocalProcessProvider(cluster.settings, log_dir=cluster.suite.log_dir, memory_bytes=512 << 20)
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    requests = WorkerRequests()
    scaler = WorkerAutoscaler(
        redis=client,
        lock=LeaderLock(client),
        provider=provider,
        executors=executors,
        events=events,
        requests=requests,
        config=WorkerConfig(idle_s=1.0, min_workers=1, max_workers=4),
        heartbeat_ttl_s=3.0,
    )
    try:
        before = _live(redis_url)
        assert len(before) == 2  # the launcher's two executors
        requests.ask("cpu", time.time(), "upgrade digits.b ×1 needs room")
        (decision,) = await scaler.tick()
        assert decision.action == "add_worker" and "needs room" in decision.reason
        await async_wait_for(
            lambda: len(_live(redis_url)) == 3, what="the new worker's heartbeat", timeout_s=60
        )
        (new,) = _live(redis_url) - before
        port = int(new.rsplit("-", 1)[1])
        proc = provider.suite.procs[f"executor-{port}"]
        assert len(os.sched_getaffinity(proc.pid)) == 1  # its own core

        # Idle for idle_s: only the worker this provider started may go, never the launcher's.
        async def ticked_until_removing() -> bool:
            await scaler.tick()
            return bool(scaler.removing)

        # a tick every 0.5 s (a planner loop, sped up) until idle_s has passed and it starts removing one
        await async_wait_for(ticked_until_removing, what="an idle worker removed", timeout_s=30, every_s=0.5)
        assert list(scaler.removing) == [new]
        await scaler.settle()
        assert proc.poll() is not None  # drained, then exited by itself
        await async_wait_for(lambda: _live(redis_url) == before, what="the drained worker forgotten")
        done = [(e.action, e.outcome) for e in await events.list()]
        assert ("add_worker", "done") in done and ("drain_worker", "done") in done
    finally:
        await provider.close()
        await executors.aclose()
        await client.aclose()
        engine.dispose()


async def test_draining_a_serving_worker_loses_no_query(
    cluster: Cluster, queries: QuerySource, redis_url: str
) -> None:
    variant = cluster.profile("digits.a", saturation_qps=500.0)
    sync = redis.Redis.from_url(redis_url)
    store.publish_variants(sync, [variant])
    sync.close()
    provider = LocalProcessProvider(cluster.settings, log_dir=cluster.suite.log_dir)
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    try:
        before = _live(redis_url)
        await provider.add("cpu")
        await async_wait_for(
            lambda: len(_live(redis_url)) == 3, what="the new worker's heartbeat", timeout_s=60
        )
        (new,) = _live(redis_url) - before
        new_url = f"http://127.0.0.1:{new.rsplit('-', 1)[1]}"
        await executors.load(new_url, variant.id)
        await executors.load(cluster.executor_urls[0], variant.id)
        load = asyncio.create_task(queries.send(variant.id, rate=60, seconds=6))
        # drained while it is serving: once both workers have answered some of the load
        await async_wait_for(lambda: len(_served_by(queries)) == 2, what="both workers serving")
        drained = await executors.drain_worker(new_url, exit=True)
        assert drained["draining"] and drained["exiting"]
        assert [i["variant"] for i in drained["instances"]] == [variant.id]  # type: ignore[index]
        await load
        await queries.wait_answered()
        missing = set(queries.sent) - set(queries.answers)
        assert not missing, f"{len(missing)} of {len(queries.sent)} queries never answered"
        assert not [a for a in queries.answers.values() if a.outcome != "answered"]
        served_by = _served_by(queries)
        assert new in served_by and len(served_by) == 2  # both served; the drained one until it left
        assert new not in _live(redis_url)  # it forgot itself in the metadata store
    finally:
        await provider.close()
        await executors.aclose()
