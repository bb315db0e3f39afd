"""The failover loop's hearing of failure notices, against a real Redis: its subscription is taken again
after a loss, and a worker declared failed while it was not listening is failed over all the same —
found with the declaration, at once on subscribing again, or when the worker leaves the snapshot. A false
alarm's worker and one that left on purpose are not."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis

from infaas.data import store
from infaas.data.failures import FailureNotice, claim_key, declare_failure
from infaas.policy.selection import WorkerView
from services.planner.failures import FailureWatch
from services.planner.loops.failover import Failover
from services.planner.loops.leader import LeaderLock
from tests.redis_faults import gate_resubscriptions, kill_connections

TTL_S = 0.5


class HeardFailover(Failover):
    """The real loop, noting each failure it fails over instead of carrying it out (which needs a
    registry and executors: the e2e failover tests do that on real processes)."""

    def __init__(self, redis: aioredis.Redis) -> None:
        lock = LeaderLock(redis, key=f"infaas:test:leader:{uuid.uuid4().hex}", fresh_s=0)
        none: Any = None
        super().__init__(
            redis=redis, lock=lock, registry=none, executors=none, events=none, heartbeat_ttl_s=TTL_S
        )
        self.heard: list[FailureNotice] = []

    async def _fail_over(self, notice: FailureNotice) -> None:
        self.heard.append(notice)


@dataclass
class Link:
    """The loop's own Redis client, named so that a test cuts its connections and no other suite's,
    every subscription after its first held until `gate` is set; and a plain client for the test."""

    r: aioredis.Redis
    sync: redis.Redis
    name: str
    gate: asyncio.Event

    def cut(self) -> int:
        return kill_connections(self.sync, self.name)


@pytest.fixture
async def link(redis_url: str) -> AsyncIterator[Link]:
    name = f"failover-test-{uuid.uuid4().hex[:8]}"
    r = aioredis.Redis.from_url(redis_url, client_name=name)
    sync = redis.Redis.from_url(redis_url)
    yield Link(r, sync, name, gate_resubscriptions(r))
    await r.aclose()
    sync.close()


async def beat(r: aioredis.Redis, worker: str, incarnation: str, at: float) -> None:
    view = WorkerView(id=worker, hardware="cpu", url="http://127.0.0.1:1", cores=1, memory_bytes=1)
    await store.heartbeat(r, worker=view, instances={}, now=at, ttl_s=TTL_S, incarnation=incarnation)


def notice(worker: str, detector: str = "scheduler") -> FailureNotice:
    now = time.time()
    return FailureNotice(worker, "push connection dropped", now, now - 0.1, detector)


async def until(check: Any, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.01)


def names(failover: HeardFailover) -> list[str]:
    return [n.worker for n in failover.heard]


async def test_the_listener_subscribes_again_and_catches_up_on_what_was_declared_meanwhile(
    link: Link,
) -> None:
    r, sync = link.r, link.sync
    failover = HeardFailover(r)
    ready = asyncio.Event()
    listening = asyncio.create_task(failover.listen(ready))
    try:
        await asyncio.wait_for(ready.wait(), 5)
        await beat(r, "t-heard", "i1", time.time())
        assert await declare_failure(r, notice("t-heard")) is not None
        await until(lambda: names(failover) == ["t-heard"])

        # As of the last tick: four live workers, each last heartbeating a while ago.
        before = time.time() - 1.0
        for worker in ("t-missed", "t-revived", "t-newer", "t-alive"):
            await beat(r, worker, "i1", before)
            failover.heartbeat_at[worker] = before
        failover.incarnations = dict.fromkeys(("t-missed", "t-revived", "t-newer", "t-alive"), "i1")
        assert link.cut() >= 1  # the subscription is lost, and held away
        await asyncio.sleep(0.3)
        assert await declare_failure(r, notice("t-missed")) is not None  # nobody of ours hears these
        assert await declare_failure(r, notice("t-revived")) is not None
        sync.delete(claim_key("t-revived", "i1"))  # heard pulsing again: a false alarm
        assert await declare_failure(r, notice("t-newer")) is not None
        failover.heartbeat_at["t-newer"] = time.time() + 1  # heartbeating after its declaration
        link.gate.set()

        await until(lambda: "t-missed" in names(failover))
        await asyncio.sleep(0.3)
        assert names(failover) == ["t-heard", "t-missed"]
        caught = failover.heard[1]
        assert (caught.incarnation, caught.detector, caught.reason) == ("i1", "scheduler", notice("x").reason)

        # And it still hears what is published after.
        await beat(r, "t-after", "i2", time.time())
        assert await declare_failure(r, notice("t-after")) is not None
        await until(lambda: names(failover)[-1:] == ["t-after"])
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


async def test_a_worker_declared_unheard_is_failed_over_when_it_leaves_the_snapshot(
    link: Link,
) -> None:
    r = link.r
    failover = HeardFailover(r)  # its listener not running: every notice below goes unheard
    for worker in ("t-declared", "t-left", "t-revived"):
        await beat(r, worker, "i7", time.time())
    await failover.tick()
    assert failover.incarnations == dict.fromkeys(("t-declared", "t-left", "t-revived"), "i7")

    assert await declare_failure(r, notice("t-declared", detector="provider")) is not None
    await store.forget_worker(r, "t-left")  # drained: left on purpose
    assert await declare_failure(r, notice("t-revived")) is not None
    await r.delete(claim_key("t-revived", "i7"))
    await asyncio.sleep(TTL_S + 0.1)  # their heartbeats expire
    await failover.tick()

    assert names(failover) == ["t-declared"]
    assert failover.heard[0].detector == "provider"
    await failover.tick()  # handled once
    assert names(failover) == ["t-declared"]


class FlakyFailover(HeardFailover):
    """Its first failover stops on an error, as one does when Redis or the registry is briefly away."""

    async def _fail_over(self, notice: FailureNotice) -> None:
        if not self.heard and not getattr(self, "stopped", False):
            self.stopped = True
            raise ConnectionError("the registry is away")
        await super()._fail_over(notice)


async def test_a_failover_an_error_stopped_is_tried_again_at_the_next_tick(
    link: Link,
) -> None:
    r = link.r
    failover = FlakyFailover(r)
    for worker in ("t-flaky", "t-back"):
        await beat(r, worker, "i3", time.time())
    await failover.tick()
    declared = await declare_failure(r, notice("t-flaky"))
    assert declared is not None
    with pytest.raises(ConnectionError):
        await failover.fail_over(declared)
    assert failover.heard == [] and list(failover.unfinished) == [("t-flaky", "i3")]
    await failover.tick()
    assert names(failover) == ["t-flaky"] and not failover.unfinished
    assert failover.heard[0].instances == declared.instances
    await failover.tick()
    await failover.fail_over(declared)  # heard late: handled once
    assert names(failover) == ["t-flaky"]

    declared = await declare_failure(r, notice("t-back"))
    assert declared is not None
    with pytest.raises(ConnectionError):
        failover.stopped = False
        failover.heard = []
        await failover.fail_over(declared)
    await failover.fail_over(declared)  # heard again before the tick: tried again at once
    assert names(failover) == ["t-back"]
    await failover.tick()
    assert names(failover) == ["t-back"] and not failover.unfinished


async def test_the_failure_watch_records_what_was_declared_while_its_subscription_was_away(
    link: Link,
) -> None:
    r, sync = link.r, link.sync
    watch = FailureWatch(r, None, interval_s=0, misses=2)  # no pulses: only its subscription
    await watch.start()
    try:
        for worker in ("t-watched", "t-revived"):
            await beat(r, worker, "i5", time.time())
            watch.incarnations[worker] = "i5"  # as their pulses told it
        assert link.cut() >= 1
        await asyncio.sleep(0.3)
        assert await declare_failure(r, notice("t-watched")) is not None
        assert await declare_failure(r, notice("t-revived")) is not None
        sync.delete(claim_key("t-revived", "i5"))
        link.gate.set()
        await until(lambda: [n.worker for n in watch.notices] == ["t-watched"])
        assert sync.get(claim_key("t-watched", "i5", "recorded")) == watch.me.encode()
        assert watch.declared == {"t-watched": "i5"}  # its pulses from now on would be a false alarm
    finally:
        await watch.stop()
