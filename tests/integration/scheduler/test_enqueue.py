"""Query frames that reach the dispatcher together leave for Redis in one round trip, in order, and a
Redis error reaches every caller of that round trip (real Redis)."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio as aioredis

from services.scheduler.enqueue import StreamEnqueuer


async def test_frames_of_one_loop_turn_share_a_round_trip_and_keep_their_order(
    redis_url: str, redis_client: redis.Redis
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        enqueuer = StreamEnqueuer(client)
        await asyncio.gather(*(enqueuer.xadd(f"s{i % 2}", f"frame-{i}".encode()) for i in range(10)))
        assert enqueuer.round_trips == 1 and enqueuer.frames == 10
        s0 = [fields[b"f"] for _, fields in redis_client.xrange("s0")]
        s1 = [fields[b"f"] for _, fields in redis_client.xrange("s1")]
        assert s0 == [f"frame-{i}".encode() for i in range(0, 10, 2)]
        assert s1 == [f"frame-{i}".encode() for i in range(1, 10, 2)]

        await enqueuer.xadd("s0", b"alone")  # a lone frame goes by itself
        await enqueuer.xadd("s0", b"later")
        assert enqueuer.round_trips == 3
        assert [f[b"f"] for _, f in redis_client.xrange("s0")][-2:] == [b"alone", b"later"]
    finally:
        await client.aclose()


async def test_a_redis_error_reaches_every_caller_and_the_next_round_trip_works(
    redis_url: str, redis_client: redis.Redis
) -> None:
    redis_client.set("not-a-stream", "x")
    client = aioredis.Redis.from_url(redis_url)
    try:
        enqueuer = StreamEnqueuer(client)
        results = await asyncio.gather(
            enqueuer.xadd("not-a-stream", b"a"), enqueuer.xadd("not-a-stream", b"b"), return_exceptions=True
        )
        assert all(isinstance(r, redis.ResponseError) and "WRONGTYPE" in str(r) for r in results)
        await enqueuer.xadd("ok", b"c")
        assert redis_client.xlen("ok") == 1
    finally:
        await client.aclose()


async def test_a_caller_that_gives_up_does_not_break_the_others(
    redis_url: str, redis_client: redis.Redis
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        enqueuer = StreamEnqueuer(client)
        quitter = asyncio.create_task(enqueuer.xadd("s", b"quitter"))
        stayer = asyncio.create_task(enqueuer.xadd("s", b"stayer"))
        await asyncio.sleep(0)
        quitter.cancel()
        await stayer
        with pytest.raises(asyncio.CancelledError):
            await quitter
        # The frame was already on its way: it is in the stream (the executor skips it if expired).
        assert redis_client.xlen("s") == 2
    finally:
        await client.aclose()
