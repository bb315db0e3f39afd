"""The worker's heartbeat: register with the registry once, then every `heartbeat_interval_s` close each
instance's observation window, report the worker and its instances to the metadata store
(`infaas.data.heartbeats`), and unload instances of deleted or re-registered models (`stale.py`)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import redis.asyncio as aioredis

from infaas.clients.registry import AsyncRegistryClient
from infaas.data import store
from infaas.data.heartbeats import InstanceReport, heartbeat
from infaas.policy.selection import WorkerView
from infaas.schemas.api import WorkerRegistration
from services.executor import metrics
from services.executor.instance_state import Thresholds
from services.executor.instances import InstanceHost
from services.executor.serving import Instance
from services.executor.stale import StaleSweep

log = logging.getLogger("infaas.executor")


def worker_utilization(busy_s: float, elapsed_s: float, *, kind: str, cores: int) -> float:
    """The share of a worker's capacity its instances kept busy: over the cores of a CPU worker, over
    the one GPU of a CUDA worker (its instances take turns on it; counted over the host's cores, a
    saturated GPU would look idle to the planner)."""
    lanes = cores if kind == "cpu" else 1
    return min(1.0, max(0.0, busy_s) / (max(elapsed_s, 1e-3) * lanes))


def report(instance: Instance) -> InstanceReport:
    """What the heartbeat says of one instance; its observed figures are what the planner takes
    capacity from (infaas/policy/capacity.py)."""
    observed = instance.monitor.observed
    return InstanceReport(
        state=instance.monitor.status.state,
        reason=instance.monitor.status.reason,
        pending=instance.in_flight,
        batch_limit=instance.aimd.limit(),
        batch_delay_ms=instance.delay.ms,
        batch_delay=instance.delay.reason,
        served=round(observed.served_rps, 1),
        mean_batch=round(observed.mean_batch, 2),
        busy=round(observed.busy, 3),
        slowdown=round(observed.slowdown, 2),
        concurrency=instance.concurrency,
    )


@dataclass
class Heartbeat:
    host: InstanceHost
    redis: aioredis.Redis
    registry: AsyncRegistryClient
    worker: WorkerView
    """The worker as registered; each beat reports it with its memory in use and utilization."""
    thresholds: Thresholds
    interval_s: float
    ttl_s: float
    sweep: StaleSweep = field(default_factory=StaleSweep)
    _window_at: float = field(default_factory=time.monotonic)
    _busy_s: float = 0.0

    async def beat(self, *, tick: bool = False, changed: bool = False) -> None:
        """Report load and instance states; `tick` closes each instance's observation window;
        `changed`: an instance was loaded or unloaded, which schedulers learn of at once."""
        instances = self.host.instances
        if tick:
            for instance in instances.values():
                before = instance.state
                status = instance.monitor.tick(self.thresholds)
                changed |= status.state != before
                metrics.set_state(
                    instance.profile.id,
                    status.state,
                    instance.in_flight,
                    instance.aimd.limit(),
                    instance.delay.ms,
                )
        now = time.monotonic()
        busy = sum(i.busy_seconds for i in instances.values())
        utilization = worker_utilization(
            busy - self._busy_s, now - self._window_at, kind=self.worker.hardware, cores=self.worker.cores
        )
        self._window_at, self._busy_s = now, busy
        used = sum(i.profile.peak_memory_bytes for i in instances.values())
        worker = WorkerView(
            self.worker.id,
            self.worker.hardware,
            self.worker.url,
            self.worker.cores,
            self.worker.memory_bytes,
            used,
            utilization,
            self.worker.push,
            self.worker.incarnation,
        )
        reports = {vid: report(i) for vid, i in instances.items()}
        await heartbeat(self.redis, worker=worker, instances=reports, now=time.time(), ttl_s=self.ttl_s)
        if changed:  # schedulers re-read instance states now rather than at their next poll
            await self.redis.publish(store.INVALIDATE, "instances")

    async def unload_stale(self) -> bool:
        """Unload instances of deleted or re-registered models (`stale.py`); whether any went. A failed
        read only skips this heartbeat's sweep, never the heartbeat."""
        loaded = {vid: i.profile.artifact_digest for vid, i in self.host.instances.items()}
        try:
            stale = await self.sweep(self.redis, loaded)
        except Exception as exc:  # noqa: BLE001 (Redis away: the heartbeat says so)
            log.debug("stale-instance sweep skipped: %s", exc)
            return False
        unloaded = False
        for vid, why in stale:
            log.warning("unloading %s: %s", vid, why)
            unloaded |= await self.host.unload(vid)
        return unloaded

    async def run(self) -> None:
        registered = False
        w = self.worker
        while True:
            try:
                if not registered:
                    await self.registry.register_worker(
                        WorkerRegistration(
                            id=w.id,
                            hardware=w.hardware,
                            url=w.url,
                            cores=w.cores,
                            memory_bytes=w.memory_bytes,
                        )
                    )
                    registered = True
                    log.info("registered worker %s at %s", w.id, w.url)
                await self.beat(tick=True, changed=await self.unload_stale())
            except Exception as exc:  # registry or Redis briefly away: keep trying
                log.warning("heartbeat failed: %s", exc)
            await asyncio.sleep(self.interval_s)
