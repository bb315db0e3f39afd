"""Where a dispatcher's queries are answered: one future per query in flight, resolved by the reply
channel's subscription (stream path) or by a push connection (push path). The same subscription
carries the store's invalidations, which refresh the snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis

from infaas.core.aio import raise_if_cancelling
from infaas.data import store
from infaas.data.failures import FAILURES_CHANNEL, FailureNotice
from infaas.wire.frames import Decoded
from services.scheduler.push import Waiting, resolve
from services.scheduler.snapshot import SnapshotCache

log = logging.getLogger("infaas.scheduler")


class Replies:
    def __init__(self, redis: aioredis.Redis, snapshot: SnapshotCache, channel: str) -> None:
        self.redis = redis
        self.snapshot = snapshot
        self.channel = channel
        # Futures by query id; the push pool resolves them too, so it is handed this very dict.
        self.waiting: Waiting = {}
        self.on_failure: Callable[[FailureNotice], Awaitable[None]] | None = None
        """Called with each worker failure notice (`infaas.data.failures`) heard on the subscription."""

    def expect(self, qid: str) -> asyncio.Future[Decoded]:
        """The future the answer to `qid` resolves; the caller `forget`s it once it stops waiting."""
        future: asyncio.Future[Decoded] = asyncio.get_running_loop().create_future()
        self.waiting[qid] = future
        return future

    def forget(self, qid: str) -> None:
        self.waiting.pop(qid, None)

    async def listen(self, ready: asyncio.Event) -> None:
        """One subscription for all answers to this process, plus the store's invalidations and worker
        failure notices; `ready` is set once it is subscribed (and re-subscribed after a loss)."""
        while True:
            pubsub = self.redis.pubsub()
            try:
                await pubsub.subscribe(self.channel, store.INVALIDATE, FAILURES_CHANNEL)
                if ready.is_set():  # re-subscribed: invalidations sent meanwhile were missed
                    await self.snapshot.on_resubscribed()
                ready.set()
                async for message in pubsub.listen():
                    if message["type"] != "message":
                        continue
                    if message["channel"] == store.INVALIDATE.encode():
                        await self.snapshot.on_invalidate(message["data"].decode())
                        continue
                    if message["channel"] == FAILURES_CHANNEL.encode():
                        if self.on_failure is not None:
                            await self.on_failure(FailureNotice.decode(message["data"]))
                        continue
                    resolve(self.waiting, message["data"], "the reply channel")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise_if_cancelling(exc)  # stopping, not a lost subscription to take again
                log.warning("reply subscription lost (%s); resubscribing", exc)
                await asyncio.sleep(0.2)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
