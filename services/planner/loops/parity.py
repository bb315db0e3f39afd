"""Parity instances (ParM): the model autoscaler keeps ⌈m/k⌉ instances of a model's parity model loaded
for m instances of the model (at least one while the model has any), each on the worker with the fewest
instances among those holding none of the model's (a straggling worker must not hold both a member and
the parity query of a coding group), and says so in a `model_autoscaler`/`load_parity` event.

The parity models are the hidden variants the registry publishes (`store.PARITY_VARIANTS`); the scaling
policies never see them (they plan from the model's own variants), so nothing here competes with a
scaling decision, and a parity instance is not capacity for the model's queries. An instance of a parity
model no longer published (parity turned off, another k, a new training, the model deleted) is unloaded;
extra parity instances after the model scaled in are left loaded (memory, no queries).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.policy.parity import PARITY_MARK
from infaas.policy.selection import USABLE_STATES, WorkerView
from infaas.schemas.events import Outcome
from infaas.schemas.variants import VariantProfile
from services.planner.event_log import EventLog
from services.planner.policies.snapshot import ClusterSnapshot

log = logging.getLogger("infaas.planner")


@dataclass(frozen=True)
class ParityLoad:
    parity: VariantProfile
    worker: WorkerView
    reason: str


def parity_loads(parity: Mapping[str, VariantProfile], snapshot: ClusterSnapshot) -> list[ParityLoad]:
    """Pure: the parity instances to load now, at most one per model per call."""
    model_of = {v.id: d.model for d in snapshot.demands for v in d.variants}
    served: dict[str, int] = {}
    holding: dict[str, set[str]] = {}
    count: dict[str, int] = {}
    for i in snapshot.instances:
        count[i.worker_id] = count.get(i.worker_id, 0) + 1
        model = model_of.get(i.variant_id)
        if model is not None and i.state in USABLE_STATES:
            served[model] = served.get(model, 0) + 1
            holding.setdefault(model, set()).add(i.worker_id)
    out = []
    for model, pv in sorted(parity.items()):
        m = served.get(model, 0)
        if not m or pv.parity_k < 2:
            continue
        have = {i.worker_id for i in snapshot.instances if i.variant_id == pv.id and i.state in USABLE_STATES}
        want = math.ceil(m / pv.parity_k)
        if len(have) >= want:
            continue
        workers = [
            w
            for w in snapshot.workers
            if w.hardware == pv.hardware and w.id not in have and w.id not in snapshot.draining
        ]
        if not workers:
            continue
        away = holding.get(model, set())
        worker = min(workers, key=lambda w: (w.id in away, count.get(w.id, 0), w.id))
        where = "a worker without the model" if worker.id not in away else "a worker of the model (no other)"
        reason = (
            f"parity redundancy k={pv.parity_k}: {m} instance(s) of {model} need {want} parity instance(s), "
            f"{len(have)} loaded; loading {pv.id} on {worker.id}, {where}"
        )
        out.append(ParityLoad(pv, worker, reason))
    return out


def stale_parity(parity: Mapping[str, VariantProfile], snapshot: ClusterSnapshot) -> list[tuple[str, str]]:
    """Pure: (variant, worker) of the instances of parity models that are no longer published."""
    published = {p.id for p in parity.values()}
    return sorted(
        {
            (i.variant_id, i.worker_id)
            for i in snapshot.instances
            if PARITY_MARK in i.variant_id and i.variant_id not in published
        }
    )


class ParityKeeper:
    """The model autoscaler's parity step: read the published parity models, load what `parity_loads`
    asks for (one load per model at a time), record each as an event."""

    def __init__(self, *, redis: aioredis.Redis, executors: ExecutorClient, events: EventLog) -> None:
        self.redis = redis
        self.executors = executors
        self.events = events
        self.busy: dict[str, asyncio.Task[None]] = {}
        self.unloading: set[tuple[str, str]] = set()

    async def tick(self, snapshot: ClusterSnapshot, parity: dict[str, VariantProfile]) -> list[ParityLoad]:
        """`parity`: the published parity variants by model, as the tick's read found them."""
        self.busy = {m: t for m, t in self.busy.items() if not t.done()}
        loads = [p for p in parity_loads(parity, snapshot) if p.parity.model not in self.busy]
        for p in loads:
            await self._record(p, "decided")
            self.busy[p.parity.model] = asyncio.create_task(self._load(p), name=f"parity:{p.parity.model}")
        urls = {w.id: w.url for w in snapshot.workers}
        for vid, wid in stale_parity(parity, snapshot):
            if wid in urls and (vid, wid) not in self.unloading:
                self.unloading.add((vid, wid))
                task = asyncio.create_task(self._unload(vid, wid, urls[wid]), name=f"parity-unload:{vid}")
                self.busy[f"unload:{vid}:{wid}"] = task
        return loads

    async def _unload(self, vid: str, wid: str, url: str) -> None:
        reason = f"{vid} is no longer its model's published parity model: unloaded from {wid}"
        try:
            await self.executors.unload(url, vid)
        except Exception as exc:
            reason = f"{reason} — unload failed: {str(exc)[:300]}"
        finally:
            self.unloading.discard((vid, wid))
        try:
            await self.events.record(
                kind="model_autoscaler",
                action="unload_parity",
                outcome="failed" if "unload failed" in reason else "done",
                reason=reason,
                variant=vid,
                worker=wid,
            )
        except Exception as exc:  # the database briefly away must not stop scaling
            log.warning("recording an event failed: %s (%s)", exc, reason)

    async def _load(self, p: ParityLoad) -> None:
        try:
            await self.executors.load(p.worker.url, p.parity.id)
        except Exception as exc:
            await self._record(p, "failed", error=str(exc)[:300])
            return
        await self._record(p, "done")

    async def _record(self, p: ParityLoad, outcome: Outcome, error: str | None = None) -> None:
        reason = p.reason if error is None else f"{p.reason} — load failed: {error}"
        try:
            await self.events.record(
                kind="model_autoscaler",
                action="load_parity",
                outcome=outcome,
                reason=reason,
                model=p.parity.model,
                variant=p.parity.id,
                worker=p.worker.id,
                details={"k": p.parity.parity_k, "loads": [[p.parity.id, p.worker.id]]},
            )
        except Exception as exc:  # the database briefly away must not stop scaling
            log.warning("recording an event failed: %s (%s)", exc, reason)
        log.info("load_parity %s %s: %s", p.parity.model, outcome, reason)

    async def settle(self) -> None:
        if self.busy:
            await asyncio.gather(*self.busy.values(), return_exceptions=True)
