"""What the planner observes, on a real Redis: the leader lease and the offered load per variant."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from infaas import store
from services.planner.observe import LEADER_KEY, LeaderLock, LoadMeter


async def test_exactly_one_planner_holds_the_lease_and_another_takes_over_when_it_lapses(
    redis_url: str,
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        a = LeaderLock(client, lease_s=0.3, owner="a")
        b = LeaderLock(client, lease_s=0.3, owner="b")
        assert await a.hold() and not await b.hold()
        assert await a.hold()  # renewing its own lease
        await asyncio.sleep(0.45)  # a stopped renewing (crashed): the lease lapses
        assert await b.hold() and not await a.hold()
        await a.release()  # releasing someone else's lease does nothing
        assert await client.get(LEADER_KEY) == b"b"
        await b.release()
        assert await client.get(LEADER_KEY) is None
    finally:
        await client.aclose()


async def test_offered_load_is_the_rate_of_entries_added_to_each_stream(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    clock = [100.0]
    meter = LoadMeter(client, window_s=2.0, clock=lambda: clock[0])
    try:
        assert await meter.rates(["v1", "v2"]) == {"v1": 0.0, "v2": 0.0}  # no stream yet
        for _ in range(30):
            await client.xadd(store.stream_key("v1"), {"f": b"x"})
        # entries that were served and deleted still count: XDEL does not lower entries-added
        ids = [e[0] for e in await client.xrange(store.stream_key("v1"))]
        await client.xdel(store.stream_key("v1"), *ids[:20])
        clock[0] = 101.0
        assert await meter.rates(["v1", "v2"]) == {"v1": 30.0, "v2": 0.0}
        clock[0] = 103.5  # nothing new for 2.5 s: the window slides past the burst
        assert (await meter.rates(["v1"]))["v1"] == 0.0
    finally:
        await client.aclose()
