"""What a dispatcher does about a failed worker (`infaas.data.failures`), and how it measures recovery.

On a notice (heard on the replies subscription, whoever detected it): the worker leaves the snapshot at
once; queries pushed to it fail over now (`PushPool.lose`: a hung worker keeps its connection open);
queries on a stream of a variant nobody else serves are taken back (`infaas.data.orphans.take_back`) and
sent elsewhere — where another worker serves the variant, it claims them instead (services/executor/
failures.py), and each entry goes one way only.

A dropped push connection is itself a sign (FailLite): it is declared as a failure unless the worker left
on purpose (`declare_failure` checks the store).

MTTR: per model the failed worker served, the first answer from another worker ends its recovery; the
dispatcher that gave it publishes a `Recovery` (the planner records the event and the histogram).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import redis.asyncio as aioredis

from infaas.data.failures import RECOVERIES_CHANNEL, FailureNotice, Recovery, declare_failure
from infaas.data.orphans import take_back
from services.scheduler import metrics
from services.scheduler.push import WorkerLost
from services.scheduler.replies import Replies
from services.scheduler.sending import Sender
from services.scheduler.snapshot import SnapshotCache

log = logging.getLogger("infaas.scheduler")

RECOVERY_WATCH_S = 600.0
"""A model not answered by another worker within this long after a failure is no longer watched."""
_SERVING = ("active", "overloaded", "interfered")  # states whose instances have consumers reading


@dataclass(frozen=True)
class Recovering:
    notice: FailureNotice
    variant: str  # one of the failed worker's variants of this model


class Failover:
    def __init__(
        self, *, redis: aioredis.Redis, snapshot: SnapshotCache, sender: Sender, replies: Replies
    ) -> None:
        self.redis = redis
        self.snapshot = snapshot
        self.sender = sender
        self.replies = replies
        self.recovering: dict[str, Recovering] = {}  # model -> the failure it recovers from
        self._tasks: set[asyncio.Task[None]] = set()
        replies.on_failure = self.on_notice
        if sender.push is not None:
            sender.push.on_drop = self.on_drop

    def on_drop(self, addr: str, reason: str) -> None:
        """A push connection the executor's side dropped: declare its worker failed."""
        worker = next((w for w in self.snapshot.snapshot.workers if w.push == addr), None)
        if worker is None:
            return
        now = time.time()
        notice = FailureNotice(
            worker=worker.id,
            reason=f"its push connection dropped ({reason})",
            detected_at=now,
            last_seen_at=now,
            detector="scheduler",
        )
        task = asyncio.get_running_loop().create_task(self._declare(notice))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _declare(self, notice: FailureNotice) -> None:
        try:
            await declare_failure(self.redis, notice)
        except Exception as exc:  # Redis away: the pulses or the heartbeat's expiry will tell
            log.warning("declaring %s failed did not go through: %s", notice.worker, exc)

    async def on_notice(self, notice: FailureNotice) -> None:
        worker, dropped = self.snapshot.drop_failed(notice.worker)
        vids = set(dropped) | set(notice.instances)
        why = f"{notice.worker} was declared failed ({notice.reason})"
        log.warning("%s; %d variants affected", why, len(vids))
        if worker is not None and worker.push and self.sender.push is not None:
            self.sender.push.lose(worker.push, why)
        variants = self.snapshot.snapshot.variants
        for vid in sorted(vids):
            model = variants[vid].model if vid in variants else None
            if model is not None and model not in self.recovering:
                self.recovering[model] = Recovering(notice, vid)
        try:
            await self._take_back(notice, vids, why)
        except Exception as exc:  # their deadline still covers them
            log.warning("taking back the queries %s held failed: %s", notice.worker, exc)

    async def _take_back(self, notice: FailureNotice, vids: set[str], why: str) -> None:
        served = {i.variant_id for i in self.snapshot.snapshot.instances if i.state in _SERVING}
        orphaned = vids - served
        by_vid: dict[str, list[tuple[str, bytes]]] = {}
        for qid, (vid, entry_id) in list(self.sender.in_streams.items()):
            if vid in orphaned:
                by_vid.setdefault(vid, []).append((qid, entry_id))
        for vid, waiting in by_vid.items():
            taken = await take_back(self.redis, vid, dead=notice.worker, entry_ids=[e for _, e in waiting])
            for qid, entry_id in waiting:
                future = self.replies.waiting.get(qid)
                if entry_id in taken and future is not None and not future.done():
                    future.set_exception(WorkerLost(notice.worker, f"{why}; its query was taken back"))
            if taken:
                metrics.TAKEN_BACK.inc(len(taken))
                log.warning("took back %d queries of %s from %s", len(taken), vid, notice.worker)

    def answered(self, model: str, variant: str, worker: str) -> None:
        """An answer from `worker`: the end of `model`'s recovery if it is recovering from a failure of
        another worker (called on the query path only while some model is)."""
        recovering = self.recovering.get(model)
        if recovering is None or worker == recovering.notice.worker:
            return
        del self.recovering[model]
        now = time.time()
        notice = recovering.notice
        if now - notice.detected_at > RECOVERY_WATCH_S:
            return
        recovery = Recovery(
            worker=notice.worker,
            incarnation=notice.incarnation,
            model=model,
            variant=variant,
            replacement=worker,
            detected_at=notice.detected_at,
            answered_at=now,
        )
        log.info("%s recovered from %s's failure in %.1f ms", model, notice.worker, recovery.mttr_s * 1000)
        task = asyncio.get_running_loop().create_task(self._publish(recovery))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _publish(self, recovery: Recovery) -> None:
        try:
            await self.redis.publish(RECOVERIES_CHANNEL, recovery.encode())
        except Exception as exc:
            log.warning("publishing a recovery failed: %s", exc)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
