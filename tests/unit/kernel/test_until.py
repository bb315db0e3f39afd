"""`infaas.core.aio.until`: a future's result before its deadline, `TimeoutError` at it, nothing after."""

from __future__ import annotations

import asyncio
import time

import pytest

from infaas.core.aio import until
from tests.unit.virtual_time import VirtualTime


async def test_an_answer_in_time_is_returned_and_its_timer_is_gone(virtual_time: VirtualTime) -> None:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    loop.call_later(0.01, future.set_result, "answer")
    assert await until(future, time.perf_counter() + 0.5) == "answer"
    assert not future.cancelled()
    # Nothing of it is left on the loop: a deadline timer kept alive would still be scheduled.
    assert [h for h in loop._scheduled if not h.cancelled()] == []  # type: ignore[attr-defined]
    await virtual_time.advance(0.6)  # past the deadline: nothing fires
    assert future.result() == "answer"


@pytest.mark.usefixtures("virtual_time")
async def test_no_answer_by_the_deadline_is_a_timeout_and_a_late_one_is_ignored() -> None:
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await until(future, time.perf_counter() + 0.05)
    assert future.done()  # whoever answers late checks `done()` first (the dispatcher's listeners)


def test_a_deadline_already_past_times_out_at_once() -> None:
    async def scenario() -> None:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        with pytest.raises(TimeoutError):
            await until(future, time.perf_counter() - 1)

    asyncio.run(scenario())


def test_cancelling_the_waiter_cancels_the_future() -> None:
    async def scenario() -> bool:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        waiter = asyncio.create_task(until(future, time.perf_counter() + 5))
        await asyncio.sleep(0)  # one loop turn: the waiter starts and waits on the future
        assert not waiter.done()
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return future.cancelled()

    assert asyncio.run(scenario())
