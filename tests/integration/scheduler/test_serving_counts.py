"""What the gateway's load charts count as serving, read from the embedded dispatcher's snapshot (real
Redis, heartbeats as executors write them) rather than asked of the registry every sample."""

from __future__ import annotations

import time

from infaas.clients.scheduler import SchedulerClient
from infaas.core.config import Settings
from infaas.data import store
from infaas.policy.selection import WorkerView
from services.scheduler.app import EmbeddedScheduler
from tests.factories import instance_report


async def test_the_embedded_dispatcher_counts_the_usable_instances_of_live_workers(
    settings: Settings,
) -> None:
    scheduler = EmbeddedScheduler(settings)
    try:
        now = time.time()
        states = {
            "w1": {"v.a": "active", "v.b": "loading", "v.c": "failed"},
            "w2": {"v.a": "overloaded", "v.b": "inactive"},
            "w3": {"v.a": "active"},
        }
        for wid, instances in states.items():
            worker = WorkerView(id=wid, hardware="cpu", url=f"http://{wid}", cores=1, memory_bytes=1 << 30)
            await store.heartbeat(
                scheduler.redis,
                worker=worker,
                instances={vid: instance_report(state) for vid, state in instances.items()},
                now=now,
                ttl_s=settings.heartbeat_ttl_s,
            )
        await store.forget_worker(scheduler.redis, "w3")  # left: its instances no longer count
        await scheduler.snapshot.refresh_live()
        assert scheduler.serving() == {"v.a": 2, "v.b": 1}
    finally:
        await scheduler.redis.aclose()

    remote = SchedulerClient("http://127.0.0.1:1", internal_key="k", timeout_s=1.0)
    assert remote.serving() is None  # its snapshot is in the scheduler's process: the registry is asked
