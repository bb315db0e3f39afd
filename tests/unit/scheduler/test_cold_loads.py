"""Query-path cold loads (`services/scheduler/loads.py`): once however many queries ask, at most one per
model per `COLD_LOAD_EVERY_S` while something of the model serves, per variant for pinned queries, never
held back for a failover or when nothing of the model serves. The executor is a recorder of the loads
asked of it (what is tested is the limiter, not the executor); the clock is injected."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
import redis.asyncio as aioredis

from infaas.core.errors import Overloaded
from infaas.policy.selection import Decision, InstanceView, Snapshot, WorkerView
from services.scheduler.loads import COLD_LOAD_EVERY_S, ColdLoads
from services.scheduler.snapshot import SnapshotCache
from tests.factories import variant_profile

WORKER = WorkerView("w1", "cpu", "http://127.0.0.1:1", 2, 1 << 30, push="127.0.0.1:2")
A, B = variant_profile(id="m.a"), variant_profile(id="m.b")


class Recorder:
    def __init__(self) -> None:
        self.loads: list[str] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def load(self, url: str, vid: str) -> None:  # noqa: ARG002
        await self.gate.wait()
        self.loads.append(vid)


@pytest.fixture
async def cache() -> Any:
    client = aioredis.Redis.from_url("redis://127.0.0.1:1")  # never connected: the snapshot is set here
    cache = SnapshotCache(client, ttl_s=5)
    cache.snapshot = Snapshot(variants={"m.a": A, "m.b": B}, workers=(WORKER,))
    yield cache
    await client.aclose()


def _serving(cache: SnapshotCache, vid: str) -> None:
    """An active instance of `vid` on the worker, as a heartbeat would show it."""
    cache.snapshot = replace(cache.snapshot, instances=(InstanceView("w1", vid, "active"),))
    cache.serving = {vid: (WORKER,)}


def load(vid: str) -> Decision:
    return Decision(A if vid == "m.a" else B, "load", WORKER, "nothing placed can serve")


async def test_many_queries_asking_at_once_load_once(cache: SnapshotCache) -> None:
    executors = Recorder()
    executors.gate.clear()
    loads = ColdLoads(snapshot=cache, executors=executors)  # type: ignore[arg-type]
    waiting = [asyncio.create_task(loads.ensure(load("m.a"))) for _ in range(5)]
    await asyncio.sleep(0)
    executors.gate.set()
    results = await asyncio.gather(*waiting)
    assert executors.loads == ["m.a"] and results.count(True) == 1


async def test_one_load_per_model_per_interval_while_the_model_serves(cache: SnapshotCache) -> None:
    now = [100.0]
    executors = Recorder()
    loads = ColdLoads(snapshot=cache, executors=executors, clock=lambda: now[0])  # type: ignore[arg-type]
    assert await loads.ensure(load("m.a"))  # nothing of the model served: never held back
    _serving(cache, "m.a")
    with pytest.raises(Overloaded) as refused:
        await loads.ensure(load("m.b"))  # another variant of the same model, moments later
    assert "cold-loaded" in refused.value.message and refused.value.details["retry_after_s"] == 1
    # A pinned query is limited per variant: its own variant loads.
    assert await loads.ensure(load("m.b"), pinned=True)
    # A failover (the worker under the query was lost) is never held back.
    assert await loads.ensure(load("m.b"), failover=True)
    now[0] += COLD_LOAD_EVERY_S
    assert await loads.ensure(load("m.b"))
    assert executors.loads == ["m.a", "m.b", "m.b", "m.b"]


async def test_a_failed_load_is_tried_again_by_the_next_query(cache: SnapshotCache) -> None:
    class Failing(Recorder):
        async def load(self, url: str, vid: str) -> None:  # noqa: ARG002
            raise OSError("refused")

    loads = ColdLoads(snapshot=cache, executors=Failing())  # type: ignore[arg-type]
    with pytest.raises(OSError):
        await loads.ensure(load("m.a"))
    with pytest.raises(OSError):  # nothing of the model serves: not held back, tried again
        await loads.ensure(load("m.a"))
