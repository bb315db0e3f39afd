"""Sending a decided query to its variant and waiting for the answer: pushed to a chosen worker over its
persistent connection (`push.py`), or appended to the variant's Redis stream for its workers to pull
(`enqueue.py`); the answer arrives through `replies.py` either way."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from contextvars import ContextVar

import numpy as np
import redis.asyncio as aioredis

from infaas.core.aio import until
from infaas.core.config import Settings
from infaas.data import store
from infaas.policy.selection import Decision, WorkerView
from infaas.wire import local
from infaas.wire.messages import Order
from services.scheduler.enqueue import StreamEnqueuer
from services.scheduler.push import PushPool, Replied, WorkerLost
from services.scheduler.replies import Replies
from services.scheduler.snapshot import SnapshotCache

SPREAD: ContextVar[set[str] | None] = ContextVar("spread", default=None)
"""Set by the parity coder (`parity.py`) around a coded query's own dispatch: the push addresses its
coding group's members went to. A group's members must go to different workers where there are several:
on one worker, a pause there holds the member and the partners its reconstruction needs."""


class Sender:
    def __init__(
        self, *, redis: aioredis.Redis, snapshot: SnapshotCache, replies: Replies, settings: Settings
    ) -> None:
        self.snapshot = snapshot
        self.replies = replies
        self.enqueuer = StreamEnqueuer(redis)
        self.push = (
            PushPool(
                replies.waiting,
                internal_key=settings.internal_key,
                max_frame_bytes=16 * settings.max_request_bytes,
                local_dir=local.run_dir(settings.var_dir) if settings.push_local_socket else None,
            )
            if settings.dispatch == "push"
            else None
        )
        self._ids = itertools.count()  # query ids: unique per dispatcher, whose reply channel is its own
        # Where the search for the least-loaded worker starts, advanced per query: ties (every worker idle
        # from this dispatcher's view, the usual case below saturation) go round the workers instead of
        # always to the first, which left the others' instances warm but unused.
        self._turn = itertools.count()
        # Rows sent per variant, not yet added to the store's counter (the dispatcher's housekeeping does).
        self.offered_rows: Counter[str] = Counter()
        # Queries waiting on a stream: id -> (variant, entry id), for taking them back after a failure.
        self.in_streams: dict[str, tuple[str, bytes]] = {}

    def target(self, decision: Decision) -> WorkerView | None:
        """The worker to push the query to: the one it is being loaded on, or among the workers with an
        active instance (else one loading, overloaded or interfered) the one this dispatcher has the fewest
        queries waiting on (ties in turn). None: use streams."""
        if self.push is None:
            return None
        if decision.action == "load":
            return decision.worker if decision.worker is not None and decision.worker.push else None
        # A query selection queued for a loading, overloaded or interfered instance is pushed to it as
        # well: through the variant's stream it would cost a Redis round trip each way (~0.8 ms on
        # these machines, docs/benchmarks.md) for the same instance to run it.
        vid = decision.variant.id
        workers = self.snapshot.serving.get(vid) or self.snapshot.queueing.get(vid)
        if not workers:
            return None
        if len(workers) == 1:
            return workers[0]
        push = self.push
        start = next(self._turn) % len(workers)
        rotated = workers[start:] + workers[:start]  # min keeps the first of equals: the turn's
        spread = SPREAD.get()
        if spread is not None:  # a coded query: away from its coding group's other members
            chosen = min(rotated, key=lambda w: (w.push in spread, push.in_flight(w.push)))
            spread.add(chosen.push)
            return chosen
        return min(rotated, key=lambda w: push.in_flight(w.push))

    async def send(
        self,
        decision: Decision,
        target: WorkerView | None,
        inputs: dict[str, np.ndarray],
        *,
        rows: int,
        request_id: str,
        slo_ms: float | None,
        drop_after: float | None,
        give_up_at: float,
    ) -> Replied:
        """Send once (to `target`, or through the variant's stream when None) and wait until
        `give_up_at` (perf_counter) for the reply and its outputs. `drop_after` (unix s) tells the
        worker when nobody waits any more (None: run it however late). Raises `TimeoutError` when no
        reply comes in time, and `WorkerLost` when the worker cannot be reached or refuses the order."""
        variant = decision.variant
        order = Order(
            f"{next(self._ids):x}",
            variant.id,
            variant.artifact_digest,
            self.replies.channel,
            time.time(),
            drop_after,
            slo_ms,
            request_id,
        )
        qid = order.id
        frame = order.encode(inputs)
        future = self.replies.expect(qid)
        try:
            if target is None:
                self.in_streams[qid] = (
                    variant.id,
                    await self.enqueuer.xadd(store.stream_key(variant.id), frame),
                )
            else:
                assert self.push is not None
                await self.push.send(target.push, qid, frame)
            self.offered_rows[variant.id] += rows
            replied = await until(future, give_up_at)  # decoded on arrival (`push.resolve`)
        finally:
            self.replies.forget(qid)
            self.in_streams.pop(qid, None)
            if target is not None and self.push is not None:
                self.push.done(qid, target.push)
        reply = replied[0]
        if reply.outcome == "refused":
            raise WorkerLost(reply.worker, reply.error or "refused", refused=True)
        return replied
