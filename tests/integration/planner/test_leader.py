"""The planner's leader lease against a real Redis: one holder at a time, renewed by the holder, taken
back after Redis comes back empty, handed over on release."""

from __future__ import annotations

import redis.asyncio as aioredis

from services.planner.loops.leader import LeaderLock


async def test_one_holder_renews_takes_back_an_emptied_redis_and_hands_over(redis_url: str) -> None:
    r = aioredis.Redis.from_url(redis_url)
    try:
        first, second = LeaderLock(r, owner="p1", lease_s=5.0), LeaderLock(r, owner="p2", lease_s=5.0)
        assert await first.hold() and not await second.hold()
        ttl_before = await r.pttl(first.key)
        assert await first.hold() and not await second.hold()  # renewed, still the only holder
        assert await r.get(first.key) == b"p1" and await r.pttl(first.key) >= ttl_before - 200
        await r.flushdb()  # Redis came back empty: whoever asks first holds it again
        assert await first.hold() and await r.get(first.key) == b"p1"
        assert not await second.hold()
        await first.release()
        assert await second.hold() and not await first.hold()
    finally:
        await r.aclose()
