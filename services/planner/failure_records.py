"""The failure watch's records (failure_watch.py): each declared failure, each recovery and each false
alarm as one `failure` event, once however many planners hear it (a claim in Redis per failure and
model), with the detection time and the MTTR as metrics."""

from __future__ import annotations

import logging
from typing import Any

import redis.asyncio as aioredis

from infaas.data.failures import CLAIM_TTL_MS, FailureNotice, Recovery, claim_key
from services.planner import metrics
from services.planner.event_log import EventLog

log = logging.getLogger("infaas.planner")


class FailureRecords:
    """Writes failure events for one watch (`me`: its id in the claims); `events` None: none written."""

    def __init__(self, redis: aioredis.Redis, events: EventLog | None, me: str) -> None:
        self.redis = redis
        self.events = events
        self.me = me

    async def declared(self, notice: FailureNotice) -> None:
        if not await self.redis.set(
            claim_key(notice.worker, notice.incarnation, "recorded"), self.me, nx=True, px=CLAIM_TTL_MS
        ):
            return
        detection_s = max(0.0, notice.detected_at - notice.last_seen_at)
        metrics.FAILURES_DETECTED.labels(notice.detector).inc()
        metrics.DETECTION_SECONDS.observe(detection_s)
        await self._record(
            action="declared",
            outcome="failed",
            worker=notice.worker,
            reason=f"declared failed by the {notice.detector}: {notice.reason}",
            details={
                "detector": notice.detector,
                "incarnation": notice.incarnation,
                "detection_ms": round(detection_s * 1000, 1),
                "instances": list(notice.instances),
            },
        )

    async def recovered(self, recovery: Recovery) -> None:
        key = claim_key(recovery.worker, recovery.incarnation, f"recovered:{recovery.model}")
        if not await self.redis.set(key, self.me, nx=True, px=CLAIM_TTL_MS):
            return
        metrics.MTTR_SECONDS.observe(recovery.mttr_s)
        mttr_ms = round(recovery.mttr_s * 1000, 1)
        await self._record(
            action="recovered",
            outcome="done",
            worker=recovery.replacement,
            model=recovery.model,
            variant=recovery.variant,
            reason=(
                f"{recovery.model} answered by {recovery.replacement} {mttr_ms} ms after "
                f"{recovery.worker} was declared failed (MTTR)"
            ),
            details={"failed_worker": recovery.worker, "mttr_ms": mttr_ms},
        )

    async def revived(self, worker: str, incarnation: str) -> None:
        """A worker declared failed pulses again: it had stalled (the watch cleared its claim)."""
        await self._record(
            action="revived",
            outcome="done",
            worker=worker,
            reason=f"{worker} pulsed again after being declared failed: it had stalled, not died",
            details={"incarnation": incarnation},
        )

    async def _record(self, **fields: Any) -> None:
        if self.events is None:
            return
        try:
            await self.events.record(kind="failure", **fields)
        except Exception:  # an event that cannot be written never stops detection
            log.exception("recording a failure event failed")
