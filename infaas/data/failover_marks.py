"""Which variants are answering for another after a worker failed, so that their answers say so.

The planner's failover (services/planner/loops/failover.py) writes one field per fallback variant to the
hash `infaas:failover:serving` — the variant that answers instead of the failed one (a warm backup of
another variant, or the progressive failover's small or chosen cold backup) → JSON `{from, app, reason,
since}` — and removes it when the failed variant serves again or the fallback is gone. Schedulers read the
whole hash in their housekeeping turn (it holds a field per failed-over variant: a handful) and stamp each
answer from a marked variant with `failover: {from, reason}` (services/scheduler/failovers.py), one
dict look-up per answer.
"""

from __future__ import annotations

import orjson
import redis.asyncio as aioredis

SERVING_KEY = "infaas:failover:serving"


async def mark(
    redis: aioredis.Redis, variant: str, *, failed: str, app: str, reason: str, since: float
) -> None:
    doc = {"from": failed, "app": app, "reason": reason, "since": since}
    await redis.hset(SERVING_KEY, variant, orjson.dumps(doc))


async def unmark(redis: aioredis.Redis, *variants: str) -> None:
    if variants:
        await redis.hdel(SERVING_KEY, *variants)


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
