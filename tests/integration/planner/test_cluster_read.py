"""The planner's read of the cluster (`services/planner/loops/cluster.py`), on a real Redis: what it
returns is what the store holds, and an unchanged cluster is read in one round trip."""

from __future__ import annotations

import time
from typing import Any

import redis
import redis.asyncio as aioredis

from infaas.data import store
from infaas.data.heartbeats import InstanceReport
from infaas.policy.capacity import Observed
from infaas.policy.selection import WorkerView
from services.planner.loops.cluster import DRAINING_KEY, ClusterReader
from tests.factories import instance_report, variant_profile

TTL_S = 5.0


class Counting(aioredis.Redis):
    """A real client that counts what it sends to Redis: each command sent alone, each pipeline."""

    sent: int

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent += 1
        return await super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        execute = pipe.execute

        async def counted(raise_on_error: bool = True) -> list[Any]:
            self.sent += 1
            return await execute(raise_on_error)

        pipe.execute = counted  # type: ignore[method-assign]
        return pipe


async def _beat(r: aioredis.Redis, wid: str, instances: dict[str, InstanceReport], at: float) -> None:
    worker = WorkerView(id=wid, hardware="cpu", url=f"http://{wid}:1", cores=2, memory_bytes=1 << 30)
    await store.heartbeat(r, worker=worker, instances=instances, now=at, ttl_s=TTL_S)


async def test_an_unchanged_cluster_is_read_in_one_round_trip_and_what_appears_is_read_at_once(
    redis_url: str,
) -> None:
    sync = redis.Redis.from_url(redis_url)
    client = Counting.from_url(redis_url)
    client.sent = 0
    now = time.time()
    try:
        store.publish_variants(sync, [variant_profile(id="m.a"), variant_profile(id="m.b")], notify=False)
        store.publish_parity(sync, variant_profile(id="m.parity", parity_k=2))
        served = instance_report("active", pending=1, served=12.5, mean_batch=2.0, busy=0.4)
        await _beat(client, "w1", {"m.a": served, "m.b": instance_report("loading")}, now)
        await client.set(store.offered_rows_key("m.a"), 40)
        await client.hset(store.demand_key("m"), mapping={"rows": 50, "queries": 45, "shed": 2})
        await client.sadd(DRAINING_KEY, "w1")
        reader = ClusterReader(ttl_s=TTL_S, parity=True)

        client.sent = 0
        first = await reader.read(client, now=now)
        # Nothing known yet: the lists, then what they name, then the demand of the models found.
        assert (first.round_trips, client.sent) == (3, 3)
        assert first.variants == await store.read_variants(client)
        assert set(first.variants) == {"m.a", "m.b"}
        assert first.parity == {"m": variant_profile(id="m.parity", parity_k=2)}
        assert (first.workers, first.instances) == await store.read_live(client, now=now, ttl_s=TTL_S)
        # A hash whose values are long is a hashtable in Redis: its fields come back in no fixed order.
        assert sorted(i.variant_id for i in first.instances) == ["m.a", "m.b"]
        # Every instance reports what it measured, a loading one nothing served yet.
        assert first.observed == {
            ("w1", "m.a"): Observed(served_rps=12.5, mean_batch=2.0, busy=0.4),
            ("w1", "m.b"): Observed(),
        }
        assert first.draining == {"w1"}
        assert first.beats == {"w1": now}
        assert first.rows == {"m.a": b"40", "m.b": None}
        assert first.demand == {"m": [b"50", b"45", None, b"2", None, None]}

        client.sent = 0
        again = await reader.read(client, now=now + 1)
        assert (again.round_trips, client.sent) == (1, 1)
        assert (again.variants, again.workers, again.instances) == (
            first.variants,
            first.workers,
            first.instances,
        )
        assert (again.parity, again.rows, again.demand) == (first.parity, first.rows, first.demand)

        # A worker joins and a variant of a new model is published: read in the same tick.
        store.publish_variants(sync, [variant_profile(id="n.a", model="n")], notify=False)
        await _beat(client, "w2", {"n.a": instance_report("active")}, now + 1)
        client.sent = 0
        grown = await reader.read(client, now=now + 1)
        assert (grown.round_trips, client.sent) == (3, 3)  # the new model's demand is named by its variant
        assert set(grown.variants) == {"m.a", "m.b", "n.a"}
        assert [w.id for w in grown.workers] == ["w1", "w2"]
        assert set(grown.demand) == {"m", "n"}
        assert (await reader.read(client, now=now + 1)).round_trips == 1

        # w1's heartbeat grows old and w2 leaves on purpose; a variant is withdrawn; draining is over.
        await client.zadd(store.WORKERS, {"w1": now - TTL_S - 1})
        await store.forget_worker(client, "w2")
        store.remove_variants(sync, model="m", app="a", vids=["m.b"])
        await client.srem(DRAINING_KEY, "w1")
        client.sent = 0
        shrunk = await reader.read(client, now=now + 1)
        assert (shrunk.round_trips, client.sent) == (1, 1)
        assert shrunk.workers == () and shrunk.instances == () and shrunk.observed == {}
        assert shrunk.beats == {"w2": 0.0, "w1": now - TTL_S - 1}  # listed, not live
        assert set(shrunk.variants) == {"m.a", "n.a"} and set(shrunk.rows) == {"m.a", "n.a"}
        assert shrunk.draining == frozenset()
    finally:
        sync.close()
        await client.aclose()


async def test_a_reader_without_the_load_counters_does_not_read_them(redis_url: str) -> None:
    sync = redis.Redis.from_url(redis_url)
    client = aioredis.Redis.from_url(redis_url)
    try:
        store.publish_variants(sync, [variant_profile(id="m.a")], notify=False)
        store.publish_parity(sync, variant_profile(id="m.parity", parity_k=2))
        await client.set(store.offered_rows_key("m.a"), 40)
        read = await ClusterReader(ttl_s=TTL_S, rows=False, demand=False).read(client, now=time.time())
        assert set(read.variants) == {"m.a"}
        assert (read.rows, read.demand, read.parity) == ({}, {}, {})
        assert read.round_trips == 2
    finally:
        sync.close()
        await client.aclose()
