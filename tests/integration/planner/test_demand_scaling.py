"""Demand, not dispatch, on real processes: a real dispatcher sends a wide MLP (built with onnx.helper,
real compute per row) three times what one instance carries; the planner, counting every row that
arrived (the shed ones too), replicates onto the second executor within seconds, and says so with the
numbers."""

from __future__ import annotations

import asyncio
import contextlib

import numpy as np
import redis
import redis.asyncio as aioredis

from infaas.clients.envelope import Query
from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.policy.selection import Requirements
from services.scheduler.dispatch import Dispatcher
from services.scheduler.snapshot import SnapshotCache
from tests.integration.planner.conftest import Cluster
from tests.integration.planner.test_model_autoscaler import _ticked_until, autoscaler, ticker
from tests.integration.scheduler.test_admission_burst import FEATURES, VID, measured_profile, wide_mlp
from tests.polling import async_wait_for

ROWS = 64
SLO_MS = 100.0
"""Beyond one instance, queries queue past it: shed at once or late, which the planner counts."""


async def test_a_burst_beyond_one_instance_is_replicated_within_seconds(
    cluster: Cluster, redis_url: str
) -> None:
    onnx_bytes = wide_mlp()
    digest = LocalArtifactStore(cluster.settings.resolved_artifact_dir).put(onnx_bytes)
    wide = measured_profile(onnx_bytes, digest)
    sync = redis.Redis.from_url(redis_url)
    sync.delete(store.demand_key(wide.model), store.offered_rows_key(VID))
    sync.close()
    async with autoscaler(cluster, redis_url, wide) as (scaler, events, executors, client):
        await executors.load(cluster.executor_urls[0], VID)
        settings = cluster.settings.model_copy(update={"dispatch": "push", "query_timeout_s": 30.0})
        snapshot_redis = aioredis.Redis.from_url(redis_url)
        snapshot = SnapshotCache(snapshot_redis, ttl_s=5)
        dispatcher = Dispatcher(redis=client, snapshot=snapshot, executors=executors, settings=settings)
        await snapshot.start()
        await dispatcher.start()
        try:

            async def serving() -> bool:
                await snapshot.refresh_live()
                return bool(snapshot.serving.get(VID))

            await async_wait_for(serving, what="the first instance active")
            rng = np.random.default_rng(3)
            x = rng.random((ROWS, FEATURES), dtype=np.float32)
            outcomes: list[str] = []

            async def one(i: int) -> None:
                query = Query(
                    "model", "wide", f"features:float32:{FEATURES}", Requirements(slo_ms=SLO_MS),
                    {"features": x}, f"q{i}", "shop", policy="error", cache=False,
                )  # fmt: skip
                try:
                    await dispatcher.infer(query)
                    outcomes.append("answered")
                except Exception as exc:  # shed: still demand, which is the point
                    outcomes.append(type(exc).__name__)

            async def burst() -> None:
                sent: set[asyncio.Task[None]] = set()
                for i in range(int(rate * 20)):
                    task = asyncio.create_task(one(i))
                    sent.add(task)
                    task.add_done_callback(sent.discard)
                    await asyncio.sleep(1 / rate)  # the offered rate: the scenario, not a wait
                await asyncio.gather(*sent)

            # One instance's capacity here and now (a profile taken on this shared machine can be off
            # either way): queries answered per second while a backlog waits. Then three times that,
            # in queries of 64 rows (the executor, not the dispatcher, is what runs out), for up to 20 s.
            loop = asyncio.get_running_loop()
            began = loop.time()
            await asyncio.gather(*(one(-1 - i) for i in range(400)))
            rate = 3 * 400 / (loop.time() - began)
            outcomes.clear()
            load = asyncio.create_task(burst())
            ports = {url.rsplit(":", 1)[-1] for url in cluster.executor_urls}

            def replicated() -> bool:  # on both of this cluster's executors
                return len({w for w in cluster.live_instances(VID) if w.rsplit("-", 1)[-1] in ports}) == 2

            await _ticked_until(replicated, ticker(scaler), what="a replica", timeout_s=20)
            load.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await load
        finally:
            await dispatcher.stop()
            await snapshot.stop()
            await snapshot_redis.aclose()
        (decided, *_) = [e for e in await events.list(action="replicate") if e.outcome == "decided"]
        assert decided.reason.startswith("offered ") and "< slack threshold" in decided.reason
        assert f"{VID} ×1 at batch ~" in decided.reason
        assert outcomes.count("answered") > 0
