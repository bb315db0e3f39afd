"""Which variants are answering for another after a worker failed, so that their answers say so.

The planner's failover (services/planner/loops/failover.py) writes one field per fallback variant to the
hash `infaas:failover:serving` — the variant that answers instead of the failed one (a warm backup of
another variant, or the progressive failover's small or chosen cold backup) → JSON `{from, app, reason,
since}` — and removes it when the failed variant serves again or the fallback is gone. Each change is
announced on the store's invalidation channel (`CHANGED`): schedulers re-read the whole hash then (it holds
a field per failed-over variant: a handful), not on a timer, and stamp each answer from a marked variant
with `failover: {from, reason}` (services/scheduler/failover_marks.py), one dict look-up per answer.
"""

from __future__ import annotations

import orjson
import redis.asyncio as aioredis

from infaas.data import store

SERVING_KEY = "infaas:failover:serving"
CHANGED = "failovers"
"""The message on `store.INVALIDATE` after the marks changed."""


async def mark(
    redis: aioredis.Redis, variant: str, *, failed: str, app: str, reason: str, since: float
) -> None:
    doc = {"from": failed, "app": app, "reason": reason, "since": since}
    pipe = redis.pipeline(transaction=True)
    pipe.hset(SERVING_KEY, variant, orjson.dumps(doc))
    pipe.publish(store.INVALIDATE, CHANGED)
    await pipe.execute()


async def unmark(redis: aioredis.Redis, *variants: str) -> None:
    if variants:
        pipe = redis.pipeline(transaction=True)
        pipe.hdel(SERVING_KEY, *variants)
        pipe.publish(store.INVALIDATE, CHANGED)
        await pipe.execute()


async def read(redis: aioredis.Redis) -> dict[str, dict[str, str]]:
    """Fallback variant → `{from, reason}` (what an answer from it carries); unreadable fields skipped."""
    out: dict[str, dict[str, str]] = {}
    for key, raw in (await redis.hgetall(SERVING_KEY)).items():
        try:
            doc = orjson.loads(raw)
            out[key.decode() if isinstance(key, bytes) else key] = {
                "from": str(doc["from"]),
                "reason": str(doc["reason"]),
            }
        except (orjson.JSONDecodeError, KeyError, TypeError):
            continue
    return out
