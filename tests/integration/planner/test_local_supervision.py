"""The local provider's supervision (`LocalProcessProvider.watch`): an executor it started that is
SIGKILLed is declared failed by the provider (its process exited: known dead), restarted under the same
worker id and port as a new incarnation that heartbeats again, and both steps are supervisor events."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time

import redis.asyncio as aioredis
from sqlalchemy import delete

from infaas.data import store
from infaas.data.db import EventRow, make_engine
from infaas.data.failures import FAILURES_CHANNEL, FailureNotice
from services.planner.event_log import EventLog
from services.planner.providers.local import LocalProcessProvider
from tests.integration.planner.conftest import Cluster
from tests.polling import async_wait_for


async def _incarnation(client: aioredis.Redis, worker: str) -> str:
    """The incarnation of `worker`'s current heartbeat ('' when it has none that is recent)."""
    score = await client.zscore(store.WORKERS, worker)
    if not score or score < time.time() - 3:
        return ""
    return store.text(await client.hget(store.worker_key(worker), "incarnation") or b"")


async def test_a_killed_executor_is_declared_restarted_and_rejoins(cluster: Cluster, redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    engine = make_engine(cluster.settings.resolved_database_url)
    with engine.begin() as conn:
        conn.execute(delete(EventRow))
    provider = LocalProcessProvider(cluster.settings, log_dir=cluster.suite.log_dir)
    pubsub = client.pubsub()
    notices: list[FailureNotice] = []

    async def collect() -> None:
        async for message in pubsub.listen():
            if message["type"] == "message":
                notices.append(FailureNotice.decode(message["data"]))

    await pubsub.subscribe(FAILURES_CHANNEL)
    collecting = asyncio.create_task(collect())
    try:
        await provider.watch(client, EventLog(engine))
        added = await provider.add("cpu")
        worker = added.split(" ", 1)[0]
        name = f"executor-{worker.rsplit('-', 1)[1]}"
        first = await async_wait_for(
            lambda: _incarnation(client, worker), what="the new worker's heartbeat", timeout_s=60
        )
        old = provider.suite.procs[name]
        old.send_signal(signal.SIGKILL)

        (notice,) = await async_wait_for(
            lambda: [n for n in notices if n.worker == worker], what="the failure notice", timeout_s=10
        )
        assert notice.detector == "provider" and "exited" in notice.reason
        assert notice.incarnation == first  # the store's, filled in by declare_failure

        async def rejoined() -> str:
            now = await _incarnation(client, worker)
            return now if now and now != first else ""

        second = await async_wait_for(rejoined, what="the restarted executor's heartbeat", timeout_s=60)
        assert second != first
        assert provider.suite.procs[name] is not old and provider.suite.procs[name].poll() is None
        actions = [(e.action, (e.details or {}).get("service")) for e in await EventLog(engine).list()]
        assert ("exited", name) in actions and ("restarted", name) in actions, actions
        assert len([n for n in notices if n.worker == worker]) == 1  # the restart is not a failure
    finally:
        collecting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await collecting
        await pubsub.aclose()  # type: ignore[no-untyped-call]
        await provider.close()
        await client.aclose()
        engine.dispose()
