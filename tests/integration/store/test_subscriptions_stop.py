"""The loops that take a Redis subscription again after a loss end on one cancel, even when the client
lets that cancel out as a lost connection (`infaas.core.aio.raise_if_cancelling`): the executor's
failure-notice listener and a dispatcher's reply subscription, against a real Redis."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from types import SimpleNamespace
from typing import Any

import pytest
import redis.asyncio as aioredis

from services.executor.failures import listen_failures
from services.scheduler.replies import Replies
from tests.redis_faults import cancel_as_lost_connection


async def _one_cancel_ends_it(
    client: aioredis.Redis, start: Coroutine[Any, Any, None], caplog: pytest.LogCaptureFixture
) -> None:
    opened = cancel_as_lost_connection(client)
    task = asyncio.create_task(start)
    try:
        for _ in range(500):
            if opened and opened[0].listening.is_set():
                break
            await asyncio.sleep(0.01)
        assert opened and opened[0].listening.is_set(), "never subscribed"
        with caplog.at_level(logging.WARNING):
            task.cancel()  # once: the client lets it out as "Connection closed by server"
            done, _ = await asyncio.wait([task], timeout=3)
        # Without the check it logged the loss and subscribed again, and ran on with its cancel spent.
        assert done == {task} and task.cancelled()
        assert len(opened) == 1 and "subscription lost" not in caplog.text
    finally:
        while not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=0.5)
        await client.aclose()


async def test_the_executors_failure_listener_ends_on_one_cancel(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    host = SimpleNamespace(redis=client)
    await _one_cancel_ends_it(client, listen_failures(host), caplog)  # type: ignore[arg-type]


async def test_a_dispatchers_reply_subscription_ends_on_one_cancel(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    replies = Replies(client, SimpleNamespace(), "infaas:reply:stop-test")  # type: ignore[arg-type]
    await _one_cancel_ends_it(client, replies.listen(asyncio.Event()), caplog)
