"""The planner's leader lease against a real Redis: one holder at a time, renewed by the holder, taken
back after Redis comes back empty, handed over on release."""

from __future__ import annotations

import redis.asyncio as aioredis

from services.planner.loops.leader import LeaderLock


async def test_one_holder_renews_takes_back_an_emptied_redis_and_hands_over(redis_url: str) -> None:
    r = aioredis.Redis.from_url(redis_url)
    try:
        # Asking every call (no fresh window), as a planner does once its last renewal is old enough.
        first = LeaderLock(r, owner="p1", lease_s=5.0, fresh_s=0.0)
        second = LeaderLock(r, owner="p2", lease_s=5.0, fresh_s=0.0)
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


async def test_a_holder_renewed_within_its_fresh_window_asks_nothing_and_renews_after_it(
    redis_url: str,
) -> None:
    r = aioredis.Redis.from_url(redis_url)
    clock = [100.0]
    try:
        lock = LeaderLock(r, owner="p1", lease_s=5.0, clock=lambda: clock[0])
        other = LeaderLock(r, owner="p2", lease_s=5.0, fresh_s=0.0)
        assert lock.fresh_s == 0.9
        assert await lock.hold()
        await r.pexpire(lock.key, 2000)  # as if time had passed in Redis: a renewal would reset it
        clock[0] += 0.5
        assert await lock.hold()  # within the window: no round trip
        assert await r.pttl(lock.key) <= 2000
        clock[0] += 0.5
        assert await lock.hold()  # 1.0 s after the last renewal: asked, and renewed
        assert await r.pttl(lock.key) > 4000
        assert not await other.hold()
        await r.delete(lock.key)  # Redis lost it: within the window the holder acts on
        assert await lock.hold() and await r.get(lock.key) is None
        clock[0] += 1.0  # past it: asked, the renewal finds nothing, and the holder takes it again
        assert await lock.hold() and await r.get(lock.key) == b"p1"
        assert not await other.hold()
    finally:
        await r.aclose()
