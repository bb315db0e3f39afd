"""The INFaaS metadata store in Redis: documented keys, and the reads and writes every service shares.

Layout (all keys under `infaas:`; everything here can be rebuilt from Postgres plus heartbeats):

| key | type | holds | written by |
|---|---|---|---|
| `variant:{vid}` | string | JSON `VariantProfile` | registry |
| `variants` | set | every profiled variant id | registry |
| `app:{app}:variants` | set | variant ids of an app's models | registry |
| `model:{model}:by_latency` | zset | vid → p50 ms at batch 1 | registry |
| `model:{model}:by_accuracy` | zset | vid → accuracy | registry |
| `model:{model}:by_cost` | zset | vid → $ per query at saturation | registry |
| `parity_variants` | set | hidden parity-model variant ids (`VariantProfile.parity_k` > 0) | registry |
| `published` | string | token of the registry's last complete publication (gone: Redis lost it) | registry |
| `profiler:{name}` | hash | hardware kinds a live profiler worker serves (TTL) | profiler |
| `workers` | zset | worker id → last heartbeat (unix s); 0: the worker left on purpose | executor |
| `worker:{wid}` | hash | the `WorkerView` and the beat's time (TTL; `infaas.data.heartbeats`) | executor |
| `instances:{wid}` | hash | vid → JSON `InstanceReport` (`infaas.data.heartbeats`) | executor |
| `q:{vid}` | stream | queries for a variant; group `executors` | scheduler → executor |
| `rows:{vid}` | string | rows sent to a variant's instances, ever | scheduler |
| `demand:{model}` | hash | rows/queries that arrived for a model, ever; of them shed or late | scheduler |
| channel `invalidate` | pub/sub | `variants` / `instances` | registry, executor |
| channel `reply:{sid}` | pub/sub | answer frames for one scheduler process | executor |
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import redis
import redis.asyncio as aioredis

from infaas.data.heartbeats import (
    WORKERS,
    InstanceReport,
    heartbeat,
    instances_key,
    observed_from,
    parse_workers,
    worker_from_hash,
    worker_key,
)
from infaas.policy.selection import InstanceView, WorkerView
from infaas.schemas.variants import VariantProfile

__all__ = [  # the heartbeat record's names, kept here beside the other keys' (`infaas.data.heartbeats`)
    "WORKERS",
    "InstanceReport",
    "heartbeat",
    "instances_key",
    "observed_from",
    "parse_workers",
    "worker_from_hash",
    "worker_key",
]

P = "infaas:"
VARIANTS = P + "variants"
PARITY_VARIANTS = P + "parity_variants"
PUBLISHED = P + "published"
INVALIDATE = P + "invalidate"
PIPELINES_CHANGED = P + "pipelines:changed"
"""A counter the registry increments after each committed pipeline write (created, deleted, planned):
the pipeline tuner re-reads the pipelines only when it moved (services/planner/loops/pipeline_tuner.py)."""
PLANNER_SIGNALS = P + "planner-signals"
"""channel: the topic of a counter the planner follows, published after each increment (`signal`), so
that its idle loops read the counter only when it may have moved (services/planner/signals.py)."""
JOBS_TOPIC = "jobs"  # after the jobs' submission counter (`infaas.jobs.protocol.SUBMITTED_KEY`)
PIPELINES_TOPIC = "pipelines"  # after `PIPELINES_CHANGED`
STREAM_GROUP = "executors"
INDEXES = ("latency", "accuracy", "cost")


def text(value: Any) -> str:
    """Redis answers bytes; keys and members we wrote are UTF-8 text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def variant_key(vid: str) -> str:
    return f"{P}variant:{vid}"


def app_variants_key(app: str) -> str:
    return f"{P}app:{app}:variants"


def model_index_key(model: str, by: str) -> str:
    return f"{P}model:{model}:by_{by}"


def stream_key(vid: str) -> str:
    return f"{P}q:{vid}"


def offered_rows_key(vid: str) -> str:
    """Rows dispatchers sent to a variant's instances, ever, pushed or through its stream: the planner's
    measure of offered load. Rows, not queries: a variant's profiled saturation throughput and the
    executor's overload state count rows, and a query of 8 rows costs about 8 of one."""
    return f"{P}rows:{vid}"


def demand_key(model: str) -> str:
    """Hash of what arrived for a model, ever, whatever became of it: `rows` and `queries`, and of those
    `shed_rows`/`shed` (refused at once: 429/503, no worker could take it) and `late_rows`/`late`
    (answered after its SLO, or not answered in time). The planner's demand: unlike
    `offered_rows_key`, it includes the queries no instance ever saw."""
    return f"{P}demand:{model}"


DEMAND_FIELDS = ("rows", "queries", "shed_rows", "shed", "late_rows", "late")


def reply_channel(sid: str) -> str:
    return f"{P}reply:{sid}"


# --- registry side (synchronous) -------------------------------------------------------------------


def signal(r: redis.Redis, counter: str, topic: str) -> None:
    """Increment `counter` and then publish `topic` on `PLANNER_SIGNALS`, in one round trip."""
    pipe = r.pipeline(transaction=False)
    pipe.incr(counter)
    pipe.publish(PLANNER_SIGNALS, topic)
    pipe.execute()


def publish_variants(
    r: redis.Redis, profiles: Iterable[VariantProfile], *, notify: bool = True, complete: bool = False
) -> int:
    """Write profiles and their indexes in one transaction, then tell schedulers to refresh. `complete`:
    these are every ready variant, so the `published` sentinel is written too, last in the same
    transaction (its absence then means Redis lost the publication, never that it is half done)."""
    pipe = r.pipeline(transaction=True)
    count = 0
    for v in profiles:
        pipe.set(variant_key(v.id), v.to_json_bytes())
        pipe.sadd(VARIANTS, v.id)
        pipe.sadd(app_variants_key(v.app), v.id)
        pipe.zadd(model_index_key(v.model, "latency"), {v.id: v.profiled_ms(1, tail=False)})
        pipe.zadd(model_index_key(v.model, "accuracy"), {v.id: v.accuracy})
        pipe.zadd(model_index_key(v.model, "cost"), {v.id: v.cost_per_query})
        count += 1
    if complete:
        pipe.set(PUBLISHED, uuid.uuid4().hex)  # a new token: schedulers see a republication by it
    if count or complete:
        pipe.execute()
        if notify:
            r.publish(INVALIDATE, "variants")
    return count


def unpublish_variants(r: redis.Redis, *, model: str, app: str, vids: Iterable[str]) -> None:
    """Take variants out of selection (being re-profiled, or their model deleted)."""
    pipe = r.pipeline(transaction=True)
    for vid in vids:
        pipe.delete(variant_key(vid))
        pipe.srem(VARIANTS, vid)
        pipe.srem(app_variants_key(app), vid)
        for by in INDEXES:
            pipe.zrem(model_index_key(model, by), vid)
    pipe.execute()
    r.publish(INVALIDATE, "variants")


def remove_variants(r: redis.Redis, *, model: str, app: str, vids: Iterable[str]) -> None:
    unpublish_variants(r, model=model, app=app, vids=vids)
    r.delete(*(model_index_key(model, by) for by in INDEXES))


def publish_parity(r: redis.Redis, profile: VariantProfile) -> None:
    """Publish a model's parity-model variant: its profile under `variant:{vid}` (executors load it like
    any variant) and its id in `parity_variants` only, never in the indexes selection reads."""
    pipe = r.pipeline(transaction=True)
    pipe.set(variant_key(profile.id), profile.to_json_bytes())
    pipe.sadd(PARITY_VARIANTS, profile.id)
    pipe.execute()
    r.publish(INVALIDATE, "variants")


def unpublish_parity(r: redis.Redis, vids: Iterable[str]) -> None:
    """Withdraw parity-model variants (their app turned parity off, or their model changed or left)."""
    vids = list(vids)
    if not vids:
        return
    pipe = r.pipeline(transaction=True)
    for vid in vids:
        pipe.delete(variant_key(vid))
        pipe.srem(PARITY_VARIANTS, vid)
    pipe.execute()
    r.publish(INVALIDATE, "variants")


def model_variants_by(r: redis.Redis, model: str, by: str) -> list[str]:
    """Variant ids of a model ordered by `latency` or `accuracy` (ascending), from the sorted sets."""
    return [text(m) for m in r.zrange(model_index_key(model, by), 0, -1)]


# --- scheduler side (asynchronous) -----------------------------------------------------------------


async def read_variants(r: aioredis.Redis) -> dict[str, VariantProfile]:
    """Every profiled variant, for the scheduler's local snapshot (two round trips, not one per query)."""
    return await VariantReader().read(r)


async def read_parity_variants(r: aioredis.Redis) -> dict[str, VariantProfile]:
    """The published parity-model variants, by the model they code for (at most one per model)."""
    vids = sorted(text(v) for v in await r.smembers(PARITY_VARIANTS))
    if not vids:
        return {}
    out: dict[str, VariantProfile] = {}
    for blob in await r.mget([variant_key(v) for v in vids]):
        if blob is not None:
            profile = VariantProfile.from_json(orjson.loads(blob))
            out[profile.model] = profile
    return out


class VariantReader:
    """`read_variants` for a loop that reads every tick (the planner): a variant whose stored JSON is
    byte for byte what the last read saw is not parsed again — parsing was most of an idle tick's CPU."""

    def __init__(self) -> None:
        self._parsed: dict[bytes, VariantProfile] = {}

    async def read(self, r: aioredis.Redis) -> dict[str, VariantProfile]:
        members: Any = await r.smembers(VARIANTS)
        ids = sorted(text(m) for m in members)
        blobs: list[Any] = await r.mget([variant_key(i) for i in ids]) if ids else []
        return self.parse(blobs)

    def parse(self, blobs: Iterable[bytes | None]) -> dict[str, VariantProfile]:
        """The variants in stored JSON `blobs` (None: a key that is gone), by id."""
        parsed: dict[bytes, VariantProfile] = {}
        out: dict[str, VariantProfile] = {}
        for blob in blobs:
            if blob:
                profile = self._parsed.get(blob) or VariantProfile.from_json(orjson.loads(blob))
                parsed[blob] = out[profile.id] = profile
        self._parsed = parsed  # only what is stored now: a changed or removed variant is forgotten
        return out


async def read_live(
    r: aioredis.Redis, *, now: float, ttl_s: float
) -> tuple[tuple[WorkerView, ...], tuple[InstanceView, ...]]:
    """Workers with a fresh heartbeat and the instances they report."""
    ids = [text(m) for m in await r.zrangebyscore(WORKERS, now - ttl_s, "+inf")]
    return await _read_workers(r, ids)


@dataclass(frozen=True)
class LiveState:
    """What a scheduler reads every poll: the live workers and their instances, the workers that left
    on purpose (`forget_worker`), and the token of the registry's last complete publication (None:
    Redis holds no publication, e.g. it came back empty)."""

    workers: tuple[WorkerView, ...]
    instances: tuple[InstanceView, ...]
    departed: frozenset[str]
    published: str | None
    ids: tuple[str, ...] = ()
    """The live workers' ids as listed, hash or not: the next read's `expect`."""


async def read_live_state(
    r: aioredis.Redis, *, now: float, ttl_s: float, expect: Sequence[str] = ()
) -> LiveState:
    """`expect`: the workers the last read found live (`LiveState.ids`). Their hashes are read in the
    same round trip as the list of live workers, so while that list stays the same a poll is one round
    trip (two wake-ups of Redis and of the poller fewer, every poll of every scheduler); a worker that
    came since is read in a second one."""
    pipe = r.pipeline(transaction=False)
    pipe.zrangebyscore(WORKERS, now - ttl_s, "+inf")
    pipe.zrangebyscore(WORKERS, 0, 0)
    pipe.get(PUBLISHED)
    for wid in expect:
        pipe.hgetall(worker_key(wid))
        pipe.hgetall(instances_key(wid))
    live, departed, published, *hashes = await pipe.execute()
    ids = [text(m) for m in live]
    read = dict(zip(expect, zip(hashes[0::2], hashes[1::2], strict=True), strict=True))
    if all(wid in read for wid in ids):
        workers, instances = parse_workers(ids, [read[wid] for wid in ids])
    else:
        workers, instances = await _read_workers(r, ids)
    return LiveState(
        workers=workers,
        instances=instances,
        departed=frozenset(text(m) for m in departed),
        published=text(published) if published is not None else None,
        ids=tuple(ids),
    )


async def _read_workers(
    r: aioredis.Redis, ids: list[str]
) -> tuple[tuple[WorkerView, ...], tuple[InstanceView, ...]]:
    if not ids:
        return (), ()
    pipe = r.pipeline(transaction=False)
    for wid in ids:
        pipe.hgetall(worker_key(wid))
        pipe.hgetall(instances_key(wid))
    results = await pipe.execute()
    return parse_workers(ids, list(zip(results[0::2], results[1::2], strict=True)))


async def forget_worker(r: aioredis.Redis, wid: str) -> None:
    """The worker leaves on purpose (drained or shut down). Its score becomes 0, not removed: schedulers
    keep a worker whose heartbeat merely vanished (Redis restarted, a key expired during a blip) for a
    while, and this tells them to drop it at once."""
    await r.delete(worker_key(wid), instances_key(wid))
    await r.zadd(WORKERS, {wid: 0})
    await r.publish(INVALIDATE, "instances")


# --- profiler workers (synchronous) ----------------------------------------------------------------

PROFILERS = P + "profilers"


def profiler_key(name: str) -> str:
    return f"{P}profiler:{name}"


def announce_profiler(
    r: redis.Redis, *, name: str, kinds: list[str], unavailable: dict[str, str], now: float, ttl_s: float
) -> None:
    """A profiler worker says which hardware queues it serves (and why it lacks the others)."""
    pipe = r.pipeline(transaction=True)
    pipe.hset(
        profiler_key(name), mapping={"kinds": orjson.dumps(kinds), "unavailable": orjson.dumps(unavailable)}
    )
    pipe.pexpire(profiler_key(name), int(ttl_s * 1000))
    pipe.zadd(PROFILERS, {name: now})
    pipe.execute()


def live_profilers(r: redis.Redis, *, now: float, ttl_s: float) -> dict[str, dict[str, Any]]:
    """Profiler workers heard from within `ttl_s`: name → {kinds, unavailable}."""
    names = [text(n) for n in r.zrangebyscore(PROFILERS, now - ttl_s, "+inf")]
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        info: Any = r.hgetall(profiler_key(name))
        if info:
            out[name] = {
                "kinds": orjson.loads(info[b"kinds"]),
                "unavailable": orjson.loads(info[b"unavailable"]),
            }
    return out
