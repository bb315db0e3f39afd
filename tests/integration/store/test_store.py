"""The Redis metadata store against a real Redis: variants, heartbeats with TTL, removal."""

from __future__ import annotations

import time

import redis
import redis.asyncio as aioredis

from infaas.data import store
from infaas.policy.selection import WorkerView
from infaas.schemas.variants import VariantProfile
from tests.factories import instance_report, variant_profile


def profile(vid: str, p50: float, accuracy: float, app: str = "a") -> VariantProfile:
    return variant_profile(
        id=vid,
        app=app,
        accuracy=accuracy,
        load_ms=3.0,
        peak_memory_bytes=1 << 20,
        latencies=((1, p50, p50 * 2), (4, p50 * 3, p50 * 4)),
    )


async def test_variants_round_trip_and_indexes(redis_url: str, redis_client: redis.Redis) -> None:
    variants = [profile("v-slow", 2.0, 0.99), profile("v-fast", 0.5, 0.90), profile("v-mid", 1.0, 0.95)]
    assert store.publish_variants(redis_client, variants) == 3
    assert store.model_variants_by(redis_client, "m", "latency") == ["v-fast", "v-mid", "v-slow"]
    assert store.model_variants_by(redis_client, "m", "accuracy") == ["v-fast", "v-mid", "v-slow"]

    client = aioredis.Redis.from_url(redis_url)
    try:
        read = await store.read_variants(client)
    finally:
        await client.aclose()
    assert read == {v.id: v for v in variants}

    store.remove_variants(redis_client, model="m", app="a", vids=[v.id for v in variants])
    assert store.model_variants_by(redis_client, "m", "latency") == []
    assert redis_client.scard(store.VARIANTS) == 0


async def test_a_variant_reader_parses_only_what_changed(redis_url: str, redis_client: redis.Redis) -> None:
    store.publish_variants(redis_client, [profile("v-a", 1.0, 0.9), profile("v-b", 2.0, 0.95)])
    reader = store.VariantReader()
    client = aioredis.Redis.from_url(redis_url)
    try:
        first = await reader.read(client)
        store.publish_variants(redis_client, [profile("v-b", 2.0, 0.97)])  # re-profiled: new accuracy
        second = await reader.read(client)
        assert second["v-a"] is first["v-a"]  # the same bytes: the same parsed profile, not a re-parse
        assert second["v-b"].accuracy == 0.97 and first["v-b"].accuracy == 0.95
        store.remove_variants(redis_client, model="m", app="a", vids=["v-a"])
        assert set(await reader.read(client)) == {"v-b"}
        store.remove_variants(redis_client, model="m", app="a", vids=["v-b"])
        assert await reader.read(client) == {}
    finally:
        await client.aclose()


async def test_heartbeats_expire_and_carry_instances(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        worker = WorkerView(
            id="w1",
            hardware="cpu",
            url="http://127.0.0.1:1",
            cores=2,
            memory_bytes=1 << 30,
            memory_used_bytes=1 << 20,
            utilization=0.25,
        )
        now = time.time()
        await store.heartbeat(
            client, worker=worker, instances={"v1": instance_report("active", pending=3)}, now=now, ttl_s=5
        )
        workers, instances = await store.read_live(client, now=now + 1, ttl_s=5)
        assert workers == (worker,)
        assert [(i.worker_id, i.variant_id, i.state, i.pending) for i in instances] == [
            ("w1", "v1", "active", 3)
        ]
        # Seen 6 s later the heartbeat is stale: the worker no longer counts as live.
        assert await store.read_live(client, now=now + 6, ttl_s=5) == ((), ())
        assert 0 < await client.pttl(store.worker_key("w1")) <= 5000

        await store.forget_worker(client, "w1")
        assert await store.read_live(client, now=now + 1, ttl_s=5) == ((), ())
    finally:
        await client.aclose()


async def test_a_poll_that_expects_the_live_workers_reads_them_in_one_round_trip(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    round_trips = 0
    pipeline = client.pipeline

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal round_trips
        round_trips += 1
        return pipeline(*args, **kwargs)  # type: ignore[arg-type]

    client.pipeline = counted  # type: ignore[method-assign]

    def worker(wid: str) -> WorkerView:
        return WorkerView(id=wid, hardware="cpu", url=f"http://{wid}", cores=1, memory_bytes=1 << 30)

    async def beat(wid: str, state: str) -> None:
        await store.heartbeat(
            client, worker=worker(wid), instances={"v1": instance_report(state)}, now=now, ttl_s=5
        )

    def seen(live: store.LiveState) -> list[tuple[str, str]]:
        return [(i.worker_id, i.state) for i in live.instances]

    try:
        now = time.time()
        await beat("w1", "active")
        await beat("w2", "loading")
        round_trips = 0
        first = await store.read_live_state(client, now=now, ttl_s=5)
        assert (round_trips, first.ids, seen(first)) == (
            2,
            ("w1", "w2"),
            [("w1", "active"), ("w2", "loading")],
        )

        await beat("w2", "active")  # a change of state, not of who is live
        round_trips = 0
        second = await store.read_live_state(client, now=now, ttl_s=5, expect=first.ids)
        assert (round_trips, seen(second)) == (1, [("w1", "active"), ("w2", "active")])
        assert second.workers == first.workers

        await beat("w3", "active")  # a worker the last poll did not know: read in a second round trip
        await store.forget_worker(client, "w1")  # and one that left, still expected
        round_trips = 0
        third = await store.read_live_state(client, now=now, ttl_s=5, expect=second.ids)
        assert (round_trips, third.ids, seen(third)) == (
            2,
            ("w2", "w3"),
            [("w2", "active"), ("w3", "active")],
        )
        assert third.departed == {"w1"}

        await client.delete(store.worker_key("w3"))  # listed, its hash expired: left out as before
        round_trips = 0
        fourth = await store.read_live_state(client, now=now, ttl_s=5, expect=third.ids)
        assert (round_trips, [w.id for w in fourth.workers], fourth.ids) == (1, ["w2"], ("w2", "w3"))
    finally:
        await client.aclose()
