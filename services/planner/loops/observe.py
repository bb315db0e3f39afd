"""What the model autoscaler observes: the offered load per variant, each app's SLO, and the snapshot the
policies plan over, read from Redis and the registry (who leads is `leader.py`)."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable

import redis.asyncio as aioredis

from infaas.clients.registry import AsyncRegistryClient
from infaas.data import store
from infaas.schemas.variants import VariantProfile
from services.planner.policies.snapshot import ClusterSnapshot, ModelDemand

log = logging.getLogger("infaas.planner")

DRAINING_KEY = store.P + "planner:draining"
"""set: workers the planner is draining (they take no new instance while they finish)."""


class LoadMeter:
    """Offered rows/s per variant: the rate, over a sliding window, of the counter of rows sent to it
    (`store.offered_rows_key`), to which every dispatcher adds what it pushed or enqueued every
    fraction of a second. Rows, because capacity is in rows: a variant's saturation throughput was
    profiled with one-row queries batched, and a query of 8 rows costs about 8 of them."""

    def __init__(
        self, redis: aioredis.Redis, *, window_s: float = 2.0, clock: Callable[[], float] = time.time
    ):
        self.redis = redis
        self.window_s = window_s
        self.clock = clock
        self.samples: dict[str, deque[tuple[float, int]]] = {}

    async def rates(self, vids: Iterable[str]) -> dict[str, float]:
        ids = sorted(vids)
        if not ids:
            return {}
        counts = await self.redis.mget([store.offered_rows_key(vid) for vid in ids])
        now = self.clock()
        out: dict[str, float] = {}
        for vid, count in zip(ids, counts, strict=True):
            added = int(count) if count is not None else 0
            window = self.samples.setdefault(vid, deque())
            window.append((now, added))
            while len(window) > 2 and now - window[1][0] >= self.window_s:
                window.popleft()
            t0, n0 = window[0]
            out[vid] = (added - n0) / (now - t0) if now > t0 else 0.0
        return out


class SloCache:
    """Each app's default latency SLO and accuracy, re-read from the registry every `ttl_s`."""

    def __init__(self, registry: AsyncRegistryClient, *, ttl_s: float = 10.0) -> None:
        self.registry = registry
        self.ttl_s = ttl_s
        self._apps: dict[str, tuple[float, float | None, float | None]] = {}

    async def get(self, app: str) -> tuple[float | None, float | None]:
        now = time.monotonic()
        hit = self._apps.get(app)
        if hit is None or now - hit[0] > self.ttl_s:
            try:
                info = await self.registry.app(app)
                hit = (now, info.default_latency_ms, info.default_min_accuracy)
            except Exception as exc:  # registry away: plan without the SLO rather than not at all
                log.warning("reading app %s failed: %s", app, exc)
                hit = (now, None, None) if hit is None else hit
            self._apps[app] = hit
        return hit[1], hit[2]


async def observe(
    redis: aioredis.Redis,
    meter: LoadMeter,
    slos: SloCache,
    *,
    heartbeat_ttl_s: float,
    now: float,
    variants_from: store.VariantReader | None = None,
) -> ClusterSnapshot:
    """Variants, live workers and instances, per-model load and SLOs, and the workers being drained."""
    variants = await (variants_from or store.VariantReader()).read(redis)
    workers, instances = await store.read_live(redis, now=now, ttl_s=heartbeat_ttl_s)
    draining = {store.text(w) for w in await redis.smembers(DRAINING_KEY)}
    rates = await meter.rates(variants)
    by_model: dict[str, list[VariantProfile]] = {}
    for v in variants.values():
        by_model.setdefault(v.model, []).append(v)
    demands = []
    for model, vs in sorted(by_model.items()):
        slo, accuracy = await slos.get(vs[0].app)
        demands.append(
            ModelDemand(
                model=model,
                load_qps=sum(rates.get(v.id, 0.0) for v in vs),
                variants=tuple(sorted(vs, key=lambda v: v.id)),
                slo_ms=slo,
                min_accuracy=accuracy,
            )
        )
    return ClusterSnapshot(
        now=now,
        demands=tuple(demands),
        workers=workers,
        instances=instances,
        draining=frozenset(draining),
    )
