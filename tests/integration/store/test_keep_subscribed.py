"""`keep_subscribed` against a real Redis: each subscription counted once Redis confirms all its
channels, taken again after its connection is cut or its handler fails (the caller then catches up), and
a dispatcher's subscription that hears a malformed failure notice keeps every reply after it."""

from __future__ import annotations

import asyncio
import time
import uuid
from types import SimpleNamespace
from typing import Any

import redis
import redis.asyncio as aioredis

from infaas.data.failures import FAILURES_CHANNEL
from infaas.data.subscription import keep_subscribed
from services.scheduler.replies import Replies
from tests.redis_faults import kill_connections


async def until(check: Any, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.01)


async def test_a_subscription_is_taken_again_after_a_cut_and_after_its_handler_fails(redis_url: str) -> None:
    name = f"keep-test-{uuid.uuid4().hex[:8]}"
    r = aioredis.Redis.from_url(redis_url, client_name=name)
    sync = redis.Redis.from_url(redis_url)
    channels = [f"infaas:test:{uuid.uuid4().hex}:{i}" for i in range(3)]
    heard: list[tuple[bytes, bytes]] = []
    subscriptions: list[int] = []
    lost: list[int] = []

    def on_message(channel: bytes, data: bytes) -> None:
        if data == b"boom":
            raise RuntimeError("a handler that failed")
        heard.append((channel, data))

    task = asyncio.create_task(
        keep_subscribed(
            r,
            channels,
            on_message,
            what="test",
            on_subscribed=subscriptions.append,
            on_lost=lambda: lost.append(len(subscriptions)),
            retry_s=0.05,
        )
    )
    try:
        await until(lambda: subscriptions == [1])  # once, for all three channels
        sync.publish(channels[2], b"one")
        await until(lambda: heard == [(channels[2].encode(), b"one")])

        assert kill_connections(sync, name) >= 1
        await until(lambda: subscriptions == [1, 2])
        assert lost == [1]
        sync.publish(channels[0], b"two")
        await until(lambda: heard[-1:] == [(channels[0].encode(), b"two")])

        sync.publish(channels[1], b"boom")  # not acted on: counts as missed, so the caller catches up
        await until(lambda: subscriptions == [1, 2, 3])
        assert lost == [1, 2]
        sync.publish(channels[1], b"three")
        await until(lambda: heard[-1:] == [(channels[1].encode(), b"three")])
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await r.aclose()
        sync.close()


async def test_a_malformed_failure_notice_costs_a_dispatcher_no_reply(redis_url: str) -> None:
    r = aioredis.Redis.from_url(redis_url)
    sync = redis.Redis.from_url(redis_url)
    resubscribed: list[bool] = []

    async def on_resubscribed() -> None:
        resubscribed.append(True)

    channel = f"infaas:reply:{uuid.uuid4().hex}"
    replies = Replies(r, SimpleNamespace(on_resubscribed=on_resubscribed), channel)  # type: ignore[arg-type]
    ready = asyncio.Event()
    task = asyncio.create_task(replies.listen(ready))
    try:
        await asyncio.wait_for(ready.wait(), 5)
        sync.publish(FAILURES_CHANNEL, b"{not json")
        sync.publish(FAILURES_CHANNEL, b'{"worker": "w"}')  # JSON, but not a notice
        await asyncio.sleep(0.3)
        assert not resubscribed  # the subscription was kept: no reply published meanwhile was lost
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await r.aclose()
        sync.close()
