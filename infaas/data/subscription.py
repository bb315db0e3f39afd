"""A Redis subscription kept for as long as its task runs: every process here hears something on pub/sub
(failure notices, invalidations, replies, the planner's signals), and each must take its subscription
again after a loss — a Redis restart, a killed connection — or it stops hearing until it is restarted.

`keep_subscribed` subscribes, hands each message to `on_message`, and on any error closes the old
subscription (bounded, so a close that hangs does not outlast a stop) and subscribes again after
`retry_s`. `on_subscribed(n)` is called once Redis has confirmed every channel of the n-th subscription
(1: the first; more: taken again after a loss, so whatever was published meanwhile was missed and the
caller catches up); `on_lost()` when it is lost. A cancel, also one a library reports as a lost
connection, ends it (`raise_if_cancelling`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import NoReturn

import redis.asyncio as aioredis

from infaas.core.aio import raise_if_cancelling

log = logging.getLogger("infaas.subscription")

CLOSE_WAIT_S = 1.0
"""The longest a lost or stopped subscription's close is waited for."""

OnMessage = Callable[[bytes, bytes], Awaitable[None] | None]
"""Called with (channel, data) of each published message, in order; a coroutine is awaited before the
next message is read. What it raises counts as a loss: the subscription is taken again, and the caller's
catch-up (`on_subscribed(n > 1)`) covers the message it could not act on. So it handles a malformed
message itself: anyone with the store's password can publish one."""
OnSubscribed = Callable[[int], Awaitable[None] | None]


async def keep_subscribed(
    redis: aioredis.Redis,
    channels: Sequence[str],
    on_message: OnMessage,
    *,
    what: str,
    on_subscribed: OnSubscribed | None = None,
    on_lost: Callable[[], None] | None = None,
    retry_s: float = 0.2,
) -> NoReturn:
    """Hear `channels` until cancelled; `what` names the subscription in the log line of a loss."""
    subscriptions = 0
    while True:
        pubsub = redis.pubsub()
        try:
            await pubsub.subscribe(*channels)
            async for message in pubsub.listen():
                kind = message["type"]
                if kind == "message":
                    done = on_message(message["channel"], message["data"])
                    if done is not None:
                        await done
                elif kind == "subscribe" and message["data"] == len(channels):
                    # Redis counts the channels this connection holds: the last one is confirmed.
                    subscriptions += 1
                    ready = on_subscribed(subscriptions) if on_subscribed is not None else None
                    if ready is not None:
                        await ready
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise_if_cancelling(exc)  # stopping, not a lost subscription to take again
            if on_lost is not None:
                on_lost()
            log.warning("%s subscription lost (%s); subscribing again in %.1f s", what, exc, retry_s)
            await asyncio.sleep(retry_s)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pubsub.aclose(), timeout=CLOSE_WAIT_S)
