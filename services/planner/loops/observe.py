"""What the model autoscaler observes: the demand per model (shed and late queries included) and the
rows sent per variant, what executors measured about their instances, when each instance appeared,
each app's SLO, and the snapshot the policies plan over, read from Redis and the registry (who leads is
`leader.py`)."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from infaas.clients.registry import AsyncRegistryClient
from infaas.data import store
from infaas.data.registry_version import Read, reread
from infaas.policy.failure_detection import missing_recently_seen
from infaas.policy.selection import InstanceView
from infaas.schemas.variants import VariantProfile
from services.planner.loops.cluster import ClusterRead
from services.planner.policies.snapshot import ClusterSnapshot, ModelDemand

log = logging.getLogger("infaas.planner")


class LoadMeter:
    """Offered rows/s per variant and demand per model, as rates over a sliding window of store
    counters that every dispatcher adds to every fraction of a second, as a tick's read found them
    (`cluster.py`): per variant the rows sent to its instances (`store.offered_rows_key`), per model
    every row that arrived, shed and late ones included (`store.demand_key`). Rows, because capacity is
    in rows: a variant's saturation throughput was profiled with one-row queries batched, and a query
    of 8 rows costs about 8 of them."""

    def __init__(self, *, window_s: float = 2.0, clock: Callable[[], float] = time.time):
        self.window_s = window_s
        self.clock = clock
        self.samples: dict[str, deque[tuple[float, int]]] = {}

    def _rate(self, key: str, count: bytes | str | None, now: float) -> float:
        added = int(count) if count is not None else 0
        window = self.samples.setdefault(key, deque())
        window.append((now, added))
        while len(window) > 2 and now - window[1][0] >= self.window_s:
            window.popleft()
        t0, n0 = window[0]
        return (added - n0) / (now - t0) if now > t0 else 0.0

    def _delta(self, key: str) -> int:
        """How much the counter grew over the current window (after `_rate` fed it)."""
        window = self.samples.get(key)
        return window[-1][1] - window[0][1] if window else 0

    def rates_of(self, counts: Mapping[str, bytes | str | None]) -> dict[str, float]:
        """Rows/s per variant from its `store.offered_rows_key` counter as just read (None: none yet)."""
        now = self.clock()
        return {vid: self._rate(vid, count, now) for vid, count in counts.items()}

    def demand_of(self, stored: Mapping[str, Sequence[bytes | str | None]]) -> dict[str, Demand]:
        """Each model's demand from its `store.demand_key` fields (`store.DEMAND_FIELDS`) as just read."""
        now = self.clock()
        out: dict[str, Demand] = {}
        for model, values in stored.items():
            rate = {
                name: self._rate(f"{model}\0{name}", value, now)
                for name, value in zip(store.DEMAND_FIELDS, values, strict=True)
            }
            queries = self._delta(f"{model}\0queries")
            missed = self._delta(f"{model}\0shed") + self._delta(f"{model}\0late")
            out[model] = Demand(
                rows_qps=rate["rows"],
                shed_qps=rate["shed_rows"],
                late_qps=rate["late_rows"],
                missed_share=min(1.0, missed / queries) if queries > 0 else 0.0,
            )
        return out


@dataclass(frozen=True, slots=True)
class Demand:
    """One model's demand over the window: rows/s that arrived, of them shed and late, and the share
    of its queries that missed."""

    rows_qps: float
    shed_qps: float
    late_qps: float
    missed_share: float


class KnownWorkers:
    """The workers a planner loop has read, to tell a read that lacks some of them because Redis lost
    their keys (restarted empty: they heartbeat again within an interval) from one where they are gone
    (`missing_recently_seen`). A loop that plans on the first kind replaces capacity that still serves."""

    def __init__(self, ttl_s: float, now: float) -> None:
        self.ttl_s = ttl_s
        self.seen_at: dict[str, float] = {}
        self.reachable_since = now  # when reads last came back after failing
        self.failing = False

    def missing_in(self, beats: Mapping[str, float], now: float) -> tuple[str, ...]:
        """After a successful read at `now` (`beats`: the heartbeat index it found, worker -> last
        heartbeat): the known workers the store no longer lists although their heartbeat is less than a
        TTL old (`missing_recently_seen`). Call `failed` when a read fails."""
        if self.failing:
            self.failing, self.reachable_since = False, now
        missing, self.seen_at = missing_recently_seen(
            self.seen_at,
            beats,
            now=now,
            reachable_since=self.reachable_since,
            ttl_s=self.ttl_s,
        )
        return missing

    def failed(self) -> None:
        self.failing = True  # the time until Redis answers again does not count against workers


class InstanceAges:
    """When the planner first saw each instance (worker, variant), so that a recently loaded one, by
    whomever, is not taken away at once (`ScalingConfig.keep_loaded_s`). An instance the planner has
    seen since it started counts from then: after a planner restart every instance looks young for a
    while, which only delays scale-downs."""

    def __init__(self) -> None:
        self.first_seen: dict[tuple[str, str], float] = {}

    def update(self, instances: Iterable[InstanceView], now: float) -> dict[tuple[str, str], float]:
        seen = {(i.worker_id, i.variant_id) for i in instances}
        self.first_seen = {k: self.first_seen.get(k, now) for k in seen}
        return dict(self.first_seen)


@dataclass(frozen=True, slots=True)
class AppDefaults:
    """What the model autoscaler plans with from an app: its default requirements, how many instances
    of each model it keeps warm, and which of its models are ready."""

    slo_ms: float | None = None
    min_accuracy: float | None = None
    warm_instances: int | None = None
    lossy: bool = True
    ready: frozenset[str] = frozenset()


UNKNOWN_APP = AppDefaults()
"""The registry away and the app never read: no SLO, no warm floor (None: the config's), nothing ready."""


class SloCache:
    """Each app's defaults (`AppDefaults`), looked at every `ttl_s`, and sooner while one of its models is
    still being profiled (its readiness is what starts its warm instances). With `token` (the registry's
    version, `infaas.data.registry_version`), a look whose token is unchanged renews the entry without
    asking the registry: a registry request is an HTTP call, a thread and SQL, ~5 ms of CPU on the cores
    that serve queries (docs/benchmarks.md)."""

    def __init__(
        self,
        registry: AsyncRegistryClient,
        *,
        ttl_s: float = 10.0,
        profiling_ttl_s: float = 1.0,
        token: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        self.registry = registry
        self.ttl_s = ttl_s
        self.profiling_ttl_s = profiling_ttl_s
        self.token = token
        self._apps: dict[str, Read[tuple[AppDefaults, bool]]] = {}  # app -> (defaults, a model profiling)

    async def get(self, app: str) -> tuple[float | None, float | None]:
        info = await self.defaults(app)
        return info.slo_ms, info.min_accuracy

    async def defaults(self, app: str) -> AppDefaults:
        now = time.monotonic()
        hit = self._apps.get(app)
        if hit is None or now - hit.checked_at > (self.profiling_ttl_s if hit.value[1] else self.ttl_s):
            try:
                hit = await reread(hit, lambda: self._read(app), token=self.token, now=now)
            except Exception as exc:  # registry away: plan without the SLO rather than not at all
                log.warning("reading app %s failed: %s", app, exc)
                kept = (UNKNOWN_APP, False) if hit is None else hit.value
                hit = Read(kept, None, now, now)  # no token: the next look asks the registry
            self._apps[app] = hit
        return hit.value[0]

    async def _read(self, app: str) -> tuple[AppDefaults, bool]:
        row = await self.registry.app(app)
        info = AppDefaults(
            slo_ms=row.default_latency_ms,
            min_accuracy=row.default_min_accuracy,
            warm_instances=row.warm_instances,
            lossy=row.lossy,
            ready=frozenset(m.name for m in row.models if m.status == "ready"),
        )
        return info, any(m.status in ("registered", "profiling") for m in row.models)


async def observe(
    read: ClusterRead, meter: LoadMeter, slos: SloCache, *, ages: InstanceAges | None = None
) -> ClusterSnapshot:
    """The snapshot the policies plan over, from one `ClusterRead` (`cluster.py`): variants, live
    workers and instances, per-model load and SLOs, and the workers being drained."""
    by_model: dict[str, list[VariantProfile]] = {}
    for v in read.variants.values():
        by_model.setdefault(v.model, []).append(v)
    rates, arrived = meter.rates_of(read.rows), meter.demand_of(read.demand)
    demands = []
    for model, vs in sorted(by_model.items()):
        app = await slos.defaults(vs[0].app)
        seen = arrived.get(model)
        dispatched = sum(rates.get(v.id, 0.0) for v in vs)
        demands.append(
            ModelDemand(
                model=model,
                # Every row that arrived; the rows sent to instances as well, for dispatchers that count
                # only those (a scheduler of an earlier release during an upgrade).
                load_qps=max(dispatched, seen.rows_qps if seen else 0.0),
                variants=tuple(sorted(vs, key=lambda v: v.id)),
                slo_ms=app.slo_ms,
                min_accuracy=app.min_accuracy,
                shed_qps=seen.shed_qps if seen else 0.0,
                late_qps=seen.late_qps if seen else 0.0,
                missed_share=seen.missed_share if seen else 0.0,
                warm_instances=app.warm_instances,
                ready=model in app.ready,
                at_reference=app.min_accuracy is None and not app.lossy,
            )
        )
    return ClusterSnapshot(
        now=read.now,
        demands=tuple(demands),
        workers=read.workers,
        instances=read.instances,
        draining=read.draining,
        observed=read.observed,
        loaded_at=ages.update(read.instances, read.now) if ages is not None else {},
    )
