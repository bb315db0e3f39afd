"""Where a dispatcher's queries are answered: one future per query in flight, resolved by the reply
channel's subscription (stream path) or by a push connection (push path). The same subscription
carries the store's invalidations, which refresh the snapshot."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis

from infaas.data import store
from infaas.data.failures import FAILURES_CHANNEL, FailureNotice
from infaas.data.subscription import keep_subscribed
from services.scheduler.push import Replied, Waiting, resolve
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
        self._invalidate, self._failures = store.INVALIDATE.encode(), FAILURES_CHANNEL.encode()

    def expect(self, qid: str) -> asyncio.Future[Replied]:
        """The future the answer to `qid` resolves; the caller `forget`s it once it stops waiting."""
        future: asyncio.Future[Replied] = asyncio.get_running_loop().create_future()
        self.waiting[qid] = future
        return future

    def forget(self, qid: str) -> None:
        self.waiting.pop(qid, None)

    async def listen(self, ready: asyncio.Event) -> None:
        """One subscription for all answers to this process, plus the store's invalidations and worker
        failure notices; `ready` is set once it is subscribed (and re-subscribed after a loss)."""

        async def subscribed(n: int) -> None:
            if n > 1:  # re-subscribed: invalidations sent meanwhile were missed
                await self.snapshot.on_resubscribed()
            ready.set()

        await keep_subscribed(
            self.redis,
            [self.channel, store.INVALIDATE, FAILURES_CHANNEL],
            self._on_message,
            what="reply",
            on_subscribed=subscribed,
        )

    def _on_message(self, channel: bytes, data: bytes) -> Awaitable[None] | None:
        if channel == self._invalidate:
            return self.snapshot.on_invalidate(data.decode())
        if channel == self._failures:
            return self._on_failure(data)
        resolve(self.waiting, data, "the reply channel")
        return None

    def _on_failure(self, data: bytes) -> Awaitable[None] | None:
        if (notice := FailureNotice.parse(data)) is None:
            log.warning("ignoring a malformed failure notice")
            return None
        return self.on_failure(notice) if self.on_failure is not None else None
