"""One read of the cluster per planner tick, in one round trip while the cluster is unchanged.

What the model autoscaler, the failover loop and the worker autoscaler plan over (variants, parity
variants, the heartbeat index, live workers' hashes and what they measured, the workers being drained,
and the rows and demand counters) is many keys. Read as separate commands, each on its own pooled
connection, it took ~11 round trips per loop per tick, each a wake-up of the planner and of Redis on
the cores that serve queries. A `ClusterReader` sends them as one pipeline, reading the variants,
workers and models its last read found in the same round trip as the lists that name them; what
appeared since is read in a second round trip (a new model's demand counters, known only once its
variants are parsed, in a third). `ClusterRead.round_trips` says how many a read took.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis

from infaas.data import failover_marks, store
from infaas.policy.capacity import Observed
from infaas.policy.selection import InstanceView, WorkerView
from infaas.schemas.variants import VariantProfile

DRAINING_KEY = store.P + "planner:draining"
"""set: workers the planner is draining (they take no new instance while they finish)."""

Hashes = tuple[dict[bytes, bytes], dict[bytes, bytes]]  # a worker's (worker hash, instances hash)


@dataclass(frozen=True, slots=True)
class ClusterRead:
    now: float
    variants: dict[str, VariantProfile]
    workers: tuple[WorkerView, ...]
    """Workers with a heartbeat within the TTL and a hash, in heartbeat order."""
    instances: tuple[InstanceView, ...]
    observed: dict[tuple[str, str], Observed]
    draining: frozenset[str]
    beats: dict[str, float]
    """Every worker the heartbeat index lists -> its last heartbeat (0: it left on purpose)."""
    parity: dict[str, VariantProfile] = field(default_factory=dict)
    """Published parity variants by the model they code for (read with `parity=True` only)."""
    rows: dict[str, Any] = field(default_factory=dict)
    """Variant -> its offered-rows counter as stored (`LoadMeter.rates_of`; with `rows=True` only)."""
    demand: dict[str, list[Any]] = field(default_factory=dict)
    """Model -> its demand fields as stored (`LoadMeter.demand_of`; with `demand=True` only)."""
    marks: dict[bytes, bytes] = field(default_factory=dict)
    """The failover marks as stored (`failover_marks.SERVING_KEY`; with `marks=True` only)."""
    round_trips: int = 1


@dataclass(frozen=True, slots=True)
class _Ask:
    """What a round trip reads beside the lists: variant JSON, worker hashes, rows and demand counters."""

    blobs: tuple[str, ...] = ()
    wids: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()
    models: tuple[str, ...] = ()


@dataclass
class _Got:
    blobs: dict[str, Any] = field(default_factory=dict)
    hashes: dict[str, Hashes] = field(default_factory=dict)
    rows: dict[str, Any] = field(default_factory=dict)
    demand: dict[str, list[Any]] = field(default_factory=dict)


class ClusterReader:
    """`read` the cluster for one loop; `rows`, `demand`, `parity`, `marks`: which of the optional parts
    it needs."""

    def __init__(
        self,
        *,
        ttl_s: float,
        rows: bool = True,
        demand: bool = True,
        parity: bool = False,
        marks: bool = False,
    ):
        self.ttl_s = ttl_s
        self.with_rows, self.with_demand, self.with_parity = rows, demand, parity
        self.with_marks = marks
        self._variants = store.VariantReader()  # unchanged JSON is not parsed again
        self._parity = store.VariantReader()
        # What the last read found, read again beside the lists that name them.
        self._vids: tuple[str, ...] = ()
        self._pids: tuple[str, ...] = ()
        self._wids: tuple[str, ...] = ()
        self._models: tuple[str, ...] = ()

    async def read(self, r: aioredis.Redis, *, now: float) -> ClusterRead:
        pipe = r.pipeline(transaction=False)
        pipe.smembers(store.VARIANTS)
        if self.with_parity:
            pipe.smembers(store.PARITY_VARIANTS)
        pipe.zrange(store.WORKERS, 0, -1, withscores=True)
        pipe.smembers(DRAINING_KEY)
        if self.with_marks:
            pipe.hgetall(failover_marks.SERVING_KEY)
        expected = _Ask((*self._vids, *self._pids), self._wids, self._vids, self._models)
        self._queue(pipe, expected)
        results = iter(await pipe.execute())
        members = next(results)
        parity_members = next(results) if self.with_parity else ()
        index, draining = next(results), next(results)
        marks = next(results) if self.with_marks else {}
        got = _Got()
        self._take(results, got, expected)
        round_trips = 1

        vids = tuple(sorted(store.text(m) for m in members))
        pids = tuple(sorted(store.text(m) for m in parity_members))
        beats = {store.text(w): float(at) for w, at in index}
        live = tuple(w for w, at in beats.items() if at >= now - self.ttl_s)  # heartbeat order
        blobs = tuple(v for v in (*vids, *pids) if v not in got.blobs)
        wids = tuple(w for w in live if w not in got.hashes)
        rows = tuple(v for v in vids if v not in got.rows) if self.with_rows else ()
        if blobs or wids or rows:  # what appeared since the last read
            round_trips += await self._read_more(r, got, _Ask(blobs, wids, rows))

        variants = self._variants.parse(got.blobs.get(v) for v in vids)
        parity = {p.model: p for p in self._parity.parse(got.blobs.get(v) for v in pids).values()}
        models = tuple(sorted({v.model for v in variants.values()}))
        if self.with_demand and (new := tuple(m for m in models if m not in got.demand)):
            round_trips += await self._read_more(r, got, _Ask(models=new))

        workers, instances = store.parse_workers(list(live), [got.hashes[w] for w in live])
        observed: dict[tuple[str, str], Observed] = {}
        for w in workers:
            observed.update(store.observed_from(w.id, got.hashes[w.id][1]))
        self._vids, self._pids, self._wids = vids, pids, live
        self._models = models if self.with_demand else ()
        return ClusterRead(
            now=now,
            variants=variants,
            workers=workers,
            instances=instances,
            observed=observed,
            draining=frozenset(store.text(w) for w in draining),
            beats=beats,
            parity=parity,
            rows={v: got.rows.get(v) for v in vids} if self.with_rows else {},
            demand={m: got.demand[m] for m in models} if self.with_demand else {},
            marks=marks,
            round_trips=round_trips,
        )

    async def _read_more(self, r: aioredis.Redis, got: _Got, ask: _Ask) -> int:
        pipe = r.pipeline(transaction=False)
        self._queue(pipe, ask)
        self._take(iter(await pipe.execute()), got, ask)
        return 1

    def _queue(self, pipe: Any, ask: _Ask) -> None:
        if ask.blobs:
            pipe.mget([store.variant_key(v) for v in ask.blobs])
        for w in ask.wids:
            pipe.hgetall(store.worker_key(w))
            pipe.hgetall(store.instances_key(w))
        if self.with_rows and ask.rows:
            pipe.mget([store.offered_rows_key(v) for v in ask.rows])
        if self.with_demand:
            for m in ask.models:
                pipe.hmget(store.demand_key(m), list(store.DEMAND_FIELDS))

    def _take(self, results: Iterator[Any], got: _Got, ask: _Ask) -> None:
        """Take what `_queue` asked for from `results`, in the same order."""
        if ask.blobs:
            got.blobs.update(zip(ask.blobs, next(results), strict=True))
        for w in ask.wids:
            got.hashes[w] = (next(results), next(results))
        if self.with_rows and ask.rows:
            got.rows.update(zip(ask.rows, next(results), strict=True))
        if self.with_demand:
            for m in ask.models:
                got.demand[m] = next(results)
