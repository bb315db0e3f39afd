"""The failure watch on uvloop (the loop the planner runs on), against a real Redis and real UDP sockets:
a worker whose signed pulses stop is acted on within a few intervals, every time. uvloop's timers fire up
to a millisecond early (a millisecond clock, read once per loop turn); a lateness timer that fired
before the worker was late by `time.monotonic()` must wait the rest, not be lost."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import redis.asyncio as aioredis
import uvloop

from infaas.data.pulses import Pulse, PulseSeal, parse_address
from services.planner.failure_watch import FailureWatch
from tests.redis_faults import cancel_as_lost_connection

T = TypeVar("T")
KEY = "int_watch_timer_key"
LEFT_S = 10.0
INTERVAL_S = 0.025


async def _silence_after_pulses(redis_url: str, rounds: int) -> tuple[list[float], int]:
    client = aioredis.Redis.from_url(redis_url)
    watch = FailureWatch(client, None, interval_s=INTERVAL_S, misses=2, key=KEY)
    await watch.start()
    out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seal = PulseSeal(KEY)
    acted_after: list[float] = []
    try:
        address = parse_address(watch.address)
        for n in range(rounds):
            worker = f"timer-test-{n}"
            for seq in range(1, 9):
                out.sendto(seal.seal(Pulse(worker, "inc", seq=seq)), address)
                await asyncio.sleep(INTERVAL_S)  # the worker's pace: the scenario, not a wait
            silent_since = time.monotonic()
            assert worker in watch.heard
            # It has no address in the store, so nothing can confirm it alive: declared on silence.
            while worker in watch.heard and time.monotonic() - silent_since < 5:
                await asyncio.sleep(0.005)
            acted_after.append(time.monotonic() - silent_since)
        return acted_after, watch.inbox.rejected if watch.inbox else -1
    finally:
        out.close()
        await watch.stop()
        await client.aclose()


def _on_uvloop(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` on a uvloop loop, then give what it left running `LEFT_S` to stop. Not
    `asyncio.Runner`: its close waits without a bound for every task it cancels, and a full run once
    hung there for good after the watch's own stop had given up on a task (a Redis subscription's close
    that did not end): the whole CI run stalled on one test."""
    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(work)
    finally:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            _, stuck = loop.run_until_complete(asyncio.wait(left, timeout=LEFT_S))
            assert not stuck, f"tasks still running {LEFT_S} s after being cancelled: {stuck}"
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def test_a_silent_worker_is_declared_every_time_on_uvloop(redis_url: str) -> None:
    acted_after, rejected = _on_uvloop(_silence_after_pulses(redis_url, rounds=8))
    # Without the re-arm, an early timer left the watch waiting for a pulse that never came: the
    # worker stayed heard for good (5 s here).
    assert all(s < 2.0 for s in acted_after), [round(s, 3) for s in acted_after]
    assert rejected == 0


def test_a_cancel_that_comes_out_of_the_client_as_another_error_still_stops_the_watch(redis_url: str) -> None:
    async def scenario() -> list[asyncio.Task[None]]:
        client = aioredis.Redis.from_url(redis_url)
        cancel_as_lost_connection(client)
        watch = FailureWatch(client, None, interval_s=INTERVAL_S, misses=2, key=KEY)
        await watch.start()
        tasks = list(watch._tasks)
        try:
            await asyncio.wait_for(watch._subscribed.wait(), timeout=5)
        finally:
            await watch.stop()
            await client.aclose()
        return tasks

    tasks = _on_uvloop(scenario())
    assert all(task.done() for task in tasks), [t for t in tasks if not t.done()]
