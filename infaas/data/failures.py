"""Worker failure notices: the one message every component hears when a worker is declared failed.

Whoever detects a failure first (missed fast heartbeats, a push connection dropping, the local provider
seeing its process exit) publishes a `FailureNotice` on `FAILURES_CHANNEL`; the planner's failover
(FailLite's progressive failover) and every scheduler act on it at once instead of waiting for the
heartbeat key to expire. Several detectors may report the same failure: consumers deduplicate by
`(worker, incarnation)`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import orjson
import redis.asyncio as aioredis

from infaas.data import store

FAILURES_CHANNEL = "infaas:failures"
RECOVERIES_CHANNEL = "infaas:recoveries"
CLAIM_TTL_MS = 600_000
"""How long a declared (worker, incarnation) is remembered, so later detectors of it stay quiet."""
FAILED_OVER = "failed-over"
"""`claim_key`'s `what` for the mark a planner leaves once it has failed a declared worker over."""


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

    @classmethod
    def parse(cls, raw: bytes | str) -> FailureNotice | None:
        """`decode`, or None for what is not a notice: anyone with the store's password can publish on
        the channel, and a claim that declared nothing holds only a detector's name."""
        try:
            return cls.decode(raw)
        except (ValueError, TypeError, KeyError):
            return None


async def publish_failure(redis: aioredis.Redis, notice: FailureNotice) -> None:
    await redis.publish(FAILURES_CHANNEL, notice.encode())


def claim_key(worker: str, incarnation: str, what: str = "declared") -> str:
    return f"{store.P}failure:{what}:{worker}:{incarnation}"


# Takes the worker out of the store unless it left on purpose (score 0: `store.forget_worker`; its push
# connections then drop without a failure) or a newer incarnation already heartbeats under its name: its
# hashes go, and its score becomes 0 as `store.forget_worker` leaves it (every reader drops it at once).
# Returns the incarnation the hash held ('' when gone) and the variants it reported.
_FAIL_WORKER = """
if redis.call('ZSCORE', KEYS[3], ARGV[1]) == '0' then return {0, ''} end
local inc = redis.call('HGET', KEYS[1], 'incarnation')
if ARGV[2] ~= '' and inc and inc ~= ARGV[2] then return {0, inc} end
local vids = redis.call('HKEYS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZADD', KEYS[3], 0, ARGV[1])
local out = {1, inc or ''}
for _, v in ipairs(vids) do out[#out + 1] = v end
return out
"""


async def declare_failure(redis: aioredis.Redis, notice: FailureNotice) -> FailureNotice | None:
    """Declare `notice.worker` failed once, whoever detects it: the first detector of a (worker,
    incarnation) takes it out of the store and publishes the notice (its instances filled in from the
    store when the detector did not know them); later ones, and a notice about an incarnation a restart
    already replaced, change nothing. Returns the notice published, or None."""
    incarnation = notice.incarnation
    if not incarnation:  # a detector that does not know it (the provider): the store's, if still there
        incarnation = store.text(await redis.hget(store.worker_key(notice.worker), "incarnation") or b"")
    if not await redis.set(claim_key(notice.worker, incarnation), notice.detector, nx=True, px=CLAIM_TTL_MS):
        return None
    keys = [store.worker_key(notice.worker), store.instances_key(notice.worker), store.WORKERS]
    result: Any = await redis.eval(_FAIL_WORKER, len(keys), *keys, notice.worker, incarnation)
    if int(result[0]) == 0:
        return None
    vids = tuple(sorted(store.text(v) for v in result[2:]))
    declared = replace(notice, incarnation=incarnation, instances=notice.instances or vids)
    pipe = redis.pipeline(transaction=False)
    # The claim keeps the notice: a subscriber that was away when it was published finds it there
    # (`declared_notices`). A claim that declared nothing keeps only the detector's name.
    encoded = declared.encode()
    pipe.set(claim_key(notice.worker, incarnation), encoded, xx=True, keepttl=True)
    pipe.publish(FAILURES_CHANNEL, encoded)
    pipe.publish(store.INVALIDATE, "instances")
    await pipe.execute()
    return declared


async def declared_notices(redis: aioredis.Redis, incarnations: dict[str, str]) -> list[FailureNotice]:
    """The notices published for these (worker → incarnation), for a subscriber that may have missed
    them: one round trip. A false alarm's claim is gone once the worker is heard again, so it is not
    among them."""
    if not incarnations:
        return []
    return _notices(await redis.mget([claim_key(w, inc) for w, inc in incarnations.items()]))


def _notices(raws: list[bytes | str | None]) -> list[FailureNotice]:
    """The notices among claims read back (gone: None; a claim that declared nothing: not a notice)."""
    return [n for raw in raws if raw and (n := FailureNotice.parse(raw)) is not None]


async def all_declared(redis: aioredis.Redis) -> list[FailureNotice]:
    """Every notice declared within the claims' TTL (`CLAIM_TTL_MS`), for a planner that was not there
    to hear them: on starting, and on taking the lead (followers do not fail over). One SCAN of the
    keyspace, so only then."""
    keys = [key async for key in redis.scan_iter(match=claim_key("*", "*"), count=1000)]
    notices: list[FailureNotice] = []
    for start in range(0, len(keys), 500):
        notices += _notices(await redis.mget(keys[start : start + 500]))
    return notices


async def not_failed_over(redis: aioredis.Redis, notices: list[FailureNotice]) -> list[FailureNotice]:
    """Those of `notices` that no planner has marked failed over: one round trip."""
    if not notices:
        return []
    marks = await redis.mget([claim_key(n.worker, n.incarnation, FAILED_OVER) for n in notices])
    return [n for n, mark in zip(notices, marks, strict=True) if mark is None]


async def mark_failed_over(redis: aioredis.Redis, notice: FailureNotice, by: str) -> None:
    """Note that planner `by` failed over this (worker, incarnation), for as long as its claim lasts: a
    planner that takes the lead later does not do it again."""
    await redis.set(claim_key(notice.worker, notice.incarnation, FAILED_OVER), by, px=CLAIM_TTL_MS)


@dataclass(frozen=True)
class Recovery:
    """The first answer for a failed worker's model from another worker: the end of that model's MTTR
    (from `detected_at`, the failure's detection, to `answered_at`), published by the scheduler that
    gave it on `RECOVERIES_CHANNEL` and recorded as an event by the planner."""

    worker: str
    incarnation: str
    model: str
    variant: str
    replacement: str  # the worker that answered
    detected_at: float
    answered_at: float

    @property
    def mttr_s(self) -> float:
        return max(0.0, self.answered_at - self.detected_at)

    def encode(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def decode(cls, raw: bytes | str) -> Recovery:
        return cls(**orjson.loads(raw))
