"""The failover loop's hearing of failure notices, against a real Redis: its subscription is taken again
after a loss, and a worker declared failed while it was not listening is failed over all the same —
found with the declaration, at once on subscribing again, when the worker leaves the snapshot, or, when
no planner led at the time, by the planner that takes the lead. A false alarm's worker, one that left on
purpose and one restarted since are not."""

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
from services.planner.failure_watch import FailureWatch
from services.planner.loops.failover import Failover
from services.planner.loops.leader import LeaderLock
from tests.redis_faults import gate_resubscriptions, kill_connections

TTL_S = 0.5


class HeardFailover(Failover):
    """The real loop, noting each failure it fails over instead of carrying it out (which needs a
    registry and executors: the e2e failover tests do that on real processes)."""

    def __init__(self, redis: aioredis.Redis, lease: str = "") -> None:
        lock = LeaderLock(redis, key=lease or f"infaas:test:leader:{uuid.uuid4().hex}", fresh_s=0)
        none: Any = None
        super().__init__(
            redis=redis, lock=lock, registry=none, executors=none, events=none, heartbeat_ttl_s=TTL_S
        )
        self.heard: list[FailureNotice] = []
        self.late: list[str] = []  # why each was acted on late ("" when heard)

    async def _fail_over(self, notice: FailureNotice, late: str = "") -> None:
        self.heard.append(notice)
        self.late.append(late)


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
    view = WorkerView(
        id=worker, hardware="cpu", url="http://127.0.0.1:1", cores=1, memory_bytes=1, incarnation=incarnation
    )
    await store.heartbeat(r, worker=view, instances={}, now=at, ttl_s=TTL_S)


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


async def test_what_was_declared_while_no_planner_led_is_failed_over_by_the_one_taking_the_lead(
    link: Link,
) -> None:
    r, sync = link.r, link.sync
    lease = f"infaas:test:leader:{uuid.uuid4().hex}"
    first, second = HeardFailover(r, lease), HeardFailover(r, lease)
    for worker in ("t-done", "t-orphan", "t-restarted", "t-revived"):
        await beat(r, worker, "i1", time.time())
    await first.tick()  # it leads
    await second.tick()  # it follows: acts on nothing
    assert first.lock.held and not second.lock.held and first.leads_seen == 1
    done = await declare_failure(r, notice("t-done"))
    assert done is not None
    await first.fail_over(done)  # heard and failed over by the leader
    assert sync.get(claim_key("t-done", "i1", "failed-over")) == first.lock.owner.encode()

    sync.set(lease, b"a-planner-that-died")  # its lease not lapsed yet: no planner leads
    heard_by_follower = await declare_failure(r, notice("t-orphan", detector="provider"))
    assert heard_by_follower is not None
    await second._on_notice(b"infaas:failures", heard_by_follower.encode())
    assert second.heard == []  # a follower does not act on it
    assert await declare_failure(r, notice("t-restarted")) is not None
    await beat(r, "t-restarted", "i2", time.time() + 0.01)  # back since, a new incarnation
    assert await declare_failure(r, notice("t-revived")) is not None
    await r.delete(claim_key("t-revived", "i1"))  # heard pulsing again: a false alarm
    sync.set(claim_key("t-garbage", "i9"), b"{not a notice")  # whoever can write the store

    assert not await second.lock.hold()
    sync.delete(lease)  # lapsed
    await second.tick()  # takes the lead
    assert second.lock.held and names(second) == ["t-orphan"]
    assert second.heard[0].instances == heard_by_follower.instances
    assert second.heard[0].detector == "provider"
    assert "taking the lead" in second.late[0]
    assert sync.get(claim_key("t-orphan", "i1", "failed-over")) == second.lock.owner.encode()
    await second.tick()
    assert names(second) == ["t-orphan"]  # once

    await second.lock.release()
    await first.tick()  # leads again: both were failed over, by it and by the other
    assert first.leads_seen == 2 and names(first) == ["t-done"]


class FlakyFailover(HeardFailover):
    """Its first failover stops on an error, as one does when Redis or the registry is briefly away."""

    async def _fail_over(self, notice: FailureNotice, late: str = "") -> None:
        if not self.heard and not getattr(self, "stopped", False):
            self.stopped = True
            raise ConnectionError("the registry is away")
        await super()._fail_over(notice, late)


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


async def test_a_failure_watch_records_what_was_declared_before_it_started_once(link: Link) -> None:
    r, sync = link.r, link.sync
    await beat(r, "t-before", "i6", time.time())
    assert await declare_failure(r, notice("t-before", detector="provider")) is not None
    first, second = (FailureWatch(r, None, interval_s=0, misses=2) for _ in range(2))
    link.gate.set()  # two watches on one client: the second's subscription is not held back
    await first.start()
    try:
        await until(lambda: [n.worker for n in first.notices] == ["t-before"])
        assert first.declared == {"t-before": "i6"}  # its pulses from now on would be a false alarm
        assert sync.get(claim_key("t-before", "i6", "recorded")) == first.me.encode()
        await second.start()
        await until(lambda: [n.worker for n in second.notices] == ["t-before"])
        assert sync.get(claim_key("t-before", "i6", "recorded")) == first.me.encode()  # recorded once
    finally:
        await first.stop()
        await second.stop()


class LoadingFailover(HeardFailover):
    """Its failovers start a recovery that ends once `loaded` is set, as a cold load does."""

    def __init__(self, redis: aioredis.Redis, lease: str = "") -> None:
        super().__init__(redis, lease)
        self.loaded = asyncio.Event()

    async def _fail_over(self, notice: FailureNotice, late: str = "") -> None:
        await super()._fail_over(notice, late)

        async def load() -> None:
            await self.loaded.wait()

        task = asyncio.create_task(load())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def test_a_failover_is_marked_done_once_its_recoveries_end_and_not_when_they_were_stopped(
    link: Link,
) -> None:
    r, sync = link.r, link.sync
    lease = f"infaas:test:leader:{uuid.uuid4().hex}"
    failover = LoadingFailover(r, lease)
    for worker in ("t-loading", "t-stopped"):
        await beat(r, worker, "i4", time.time())
    await failover.tick()
    declared = await declare_failure(r, notice("t-loading"))
    assert declared is not None
    await failover.fail_over(declared)
    await asyncio.sleep(0.05)
    assert sync.get(claim_key("t-loading", "i4", "failed-over")) is None  # still loading
    failover.loaded.set()
    await failover.settle()
    assert sync.get(claim_key("t-loading", "i4", "failed-over")) == failover.lock.owner.encode()

    # The planner stops while loading (as `startup.stop` stops it): the failover is left unmarked, and
    # the planner that leads next fails it over again.
    failover.loaded = asyncio.Event()
    declared = await declare_failure(r, notice("t-stopped"))
    assert declared is not None
    await failover.fail_over(declared)
    (recovering,), (marking,) = failover.tasks, failover.marking
    recovering.cancel()
    await asyncio.gather(recovering, marking, return_exceptions=True)
    assert not marking.cancelled()  # it saw the recovery stopped, and did not mark
    assert sync.get(claim_key("t-stopped", "i4", "failed-over")) is None
    await failover.lock.release()
    successor = HeardFailover(r, lease)
    await successor.tick()
    assert names(successor) == ["t-stopped"]
