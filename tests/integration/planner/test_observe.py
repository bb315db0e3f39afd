"""What the planner observes, on a real Redis: the leader lease and the offered load per variant."""

from __future__ import annotations

import asyncio
from typing import Any

import redis
import redis.asyncio as aioredis

from infaas.data import store
from services.planner.loops.cluster import ClusterReader
from services.planner.loops.leader import LEADER_KEY, LeaderLock
from services.planner.loops.observe import LoadMeter
from tests.factories import variant_profile
from tests.polling import async_wait_for


async def _gone(client: aioredis.Redis) -> bool:
    return not await client.exists(LEADER_KEY)


async def test_exactly_one_planner_holds_the_lease_and_another_takes_over_when_it_lapses(
    redis_url: str,
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        a = LeaderLock(client, lease_s=0.3, owner="a")
        b = LeaderLock(client, lease_s=0.3, owner="b")
        assert await a.hold() and not await b.hold()
        assert await a.hold()  # renewing its own lease
        assert 0 < await client.pttl(LEADER_KEY) <= 300  # a lease, not a lock held forever
        # a stops renewing (crashed): Redis lets the lease lapse
        await async_wait_for(lambda: _gone(client), what="a's lease lapsed", timeout_s=5)
        assert await b.hold() and not await a.hold()
        await a.release()  # releasing someone else's lease does nothing
        assert await client.get(LEADER_KEY) == b"b"
        await b.release()
        assert await client.get(LEADER_KEY) is None
    finally:
        await client.aclose()


class Counting(aioredis.Redis):
    """A real client that counts the commands it sends."""

    sent: list[str]

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(str(args[0]).upper())
        return await super().execute_command(*args, **options)


async def test_loops_that_ask_for_the_lease_at_once_share_one_round_trip(redis_url: str) -> None:
    client = Counting.from_url(redis_url)
    client.sent = []
    try:
        # No fresh window (`test_leader.py` has it): every hold past the shared ones asks Redis.
        lock = LeaderLock(client, lease_s=5.0, owner="beat", fresh_s=0.0)
        assert await lock.hold()  # taken: SET NX
        assert client.sent == ["SET"]
        # The autoscaler, the pipeline tuner and failover tick together and ask at once.
        assert await asyncio.gather(lock.hold(), lock.hold(), lock.hold()) == [True, True, True]
        assert client.sent[1:] in (["EVAL"], ["EVALSHA"])
        # One after the other, each asks Redis: a lease someone else took is seen at once.
        await client.set(LEADER_KEY, "other", px=5000)
        assert await asyncio.gather(lock.hold(), lock.hold()) == [False, False]
        assert not await lock.hold()
        assert await client.get(LEADER_KEY) == b"other"
    finally:
        await client.delete(LEADER_KEY)
        await client.aclose()


async def test_offered_load_is_the_rate_of_rows_dispatchers_sent_to_each_variant(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    sync = redis.Redis.from_url(redis_url)
    await client.delete(store.offered_rows_key("m.v1"), store.offered_rows_key("m.v2"))
    clock = [100.0]
    meter = LoadMeter(window_s=2.0, clock=lambda: clock[0])
    reader = ClusterReader(ttl_s=5.0)

    async def rates() -> dict[str, float]:  # as a planner tick reads the counters and rates them
        return meter.rates_of((await reader.read(client, now=clock[0])).rows)

    try:
        assert await rates() == {}  # nothing published
        store.publish_variants(sync, [variant_profile(id="m.v1"), variant_profile(id="m.v2")], notify=False)
        assert await rates() == {"m.v1": 0.0, "m.v2": 0.0}  # no counter yet
        # two dispatchers' turns: 10 queries of 3 rows, then 6 of 1 row; the rows count
        await client.incrby(store.offered_rows_key("m.v1"), 30)
        await client.incrby(store.offered_rows_key("m.v1"), 6)
        clock[0] = 101.0
        assert await rates() == {"m.v1": 36.0, "m.v2": 0.0}
        clock[0] = 103.5  # nothing new for 2.5 s: the window slides past the burst
        assert (await rates())["m.v1"] == 0.0
    finally:
        sync.close()
        await client.aclose()
