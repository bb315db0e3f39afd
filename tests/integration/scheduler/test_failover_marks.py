"""Answers from a fallback variant say so: the planner's marks in Redis, read by a dispatcher's
`FailoverMarks` when the planner announces a change, stamped on answers, carried through the answer
frame and the `/v1` JSON."""

from __future__ import annotations

import asyncio

import numpy as np
import orjson
import redis.asyncio as aioredis

from gateway.dataplane.routes import v1_json
from infaas.clients.envelope import Answer
from infaas.core.aio import stop_tasks
from infaas.data import failover_marks, store
from services.scheduler.failover_marks import FailoverMarks
from services.scheduler.replies import Replies
from services.scheduler.snapshot import SnapshotCache
from tests.polling import async_wait_for


def answer(variant: str) -> Answer:
    outputs = {"y": np.array([[1.0, 2.0]], dtype=np.float32)}
    return Answer(outputs, "m", variant, "w2", "cpu", 0.1, 0.2, 0.4, None, False, False, "why", "r1")


async def test_an_answer_from_a_marked_variant_says_which_it_stands_in_for(redis_url: str) -> None:
    redis = aioredis.Redis.from_url(redis_url)
    try:
        await failover_marks.mark(redis, "m.small", failed="m.full", app="a", reason="w1 failed", since=1.0)
        await failover_marks.mark(redis, "m.other", failed="m.full", app="a", reason="w1 failed", since=1.0)
        await redis.hset(failover_marks.SERVING_KEY, "m.bad", b"not json")  # skipped, not fatal
        marks = FailoverMarks()
        await marks.refresh(redis)
        assert set(marks.serving) == {"m.small", "m.other"}

        stamped = marks.stamp(answer("m.small"))
        assert stamped.failover == {"from": "m.full", "reason": "w1 failed"}
        assert marks.stamp(answer("m.full")).failover is None  # the failed variant itself: no note

        decoded = Answer.decode(stamped.encode())
        assert decoded.failover == stamped.failover
        assert Answer.decode(answer("m.full").encode()).failover is None
        assert orjson.loads(v1_json(stamped))["failover"] == {"from": "m.full", "reason": "w1 failed"}
        assert "failover" not in orjson.loads(v1_json(answer("m.full")))

        await failover_marks.unmark(redis, "m.small", "m.other", "m.bad")
        await marks.refresh(redis)
        assert marks.serving == {} and marks.stamp(answer("m.small")).failover is None
    finally:
        await redis.aclose()


async def test_a_dispatcher_hears_of_a_new_mark_without_polling(redis_url: str) -> None:
    """The planner announces each change on the invalidation channel; the snapshot cache's marks follow
    it with no timer running (its poll is never started here), and drop the mark when it is removed."""
    redis = aioredis.Redis.from_url(redis_url)
    snapshot = SnapshotCache(redis, ttl_s=5.0)
    replies = Replies(redis, snapshot, store.reply_channel("test-marks"))
    ready = asyncio.Event()
    listening = asyncio.create_task(replies.listen(ready))
    try:
        await asyncio.wait_for(ready.wait(), timeout=10)
        assert snapshot.failovers.serving == {}
        await failover_marks.mark(redis, "m.small", failed="m.full", app="a", reason="w1 failed", since=1.0)
        await async_wait_for(lambda: "m.small" in snapshot.failovers.serving, what="the mark heard of")
        stamped = snapshot.failovers.stamp(answer("m.small")).failover
        assert stamped == {"from": "m.full", "reason": "w1 failed"}

        await failover_marks.unmark(redis, "m.small")
        await async_wait_for(lambda: not snapshot.failovers.serving, what="the removal heard of")
        assert snapshot.failovers.stamp(answer("m.small")).failover is None
    finally:
        await stop_tasks(listening)
        await redis.aclose()
