"""Worker failure notices: the one message every component hears when a worker is declared failed.

Whoever detects a failure first (missed fast heartbeats, a push connection dropping, the local provider
seeing its process exit) publishes a `FailureNotice` on `FAILURES_CHANNEL`; the planner's failover
(FailLite's progressive failover) and every scheduler act on it at once instead of waiting for the
heartbeat key to expire. Several detectors may report the same failure: consumers deduplicate by
`(worker, incarnation)`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import orjson
import redis.asyncio as aioredis

FAILURES_CHANNEL = "infaas:failures"


@dataclass(frozen=True)
class FailureNotice:
    worker: str
    reason: str  # why it was declared failed, said in events: "2 heartbeats missed", "process exited"
    detected_at: float  # epoch seconds when the detector declared it
    last_seen_at: float  # epoch seconds of the worker's last sign of life the detector had
    detector: str  # who declared it: "scheduler", "planner", "provider", ...
    incarnation: str = ""  # the worker's start id, so a restarted worker of the same name is not confused
    instances: tuple[str, ...] = ()  # variant ids it served, when the detector knows them

    def encode(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def decode(cls, raw: bytes | str) -> FailureNotice:
        doc = orjson.loads(raw)
        doc["instances"] = tuple(doc.get("instances") or ())
        return cls(**doc)


async def publish_failure(redis: aioredis.Redis, notice: FailureNotice) -> None:
    await redis.publish(FAILURES_CHANNEL, notice.encode())
