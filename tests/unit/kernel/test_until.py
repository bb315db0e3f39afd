"""`infaas.core.aio.until`: a future's result before its deadline, `TimeoutError` at it, nothing after."""

from __future__ import annotations

import asyncio
import time

import pytest

from infaas.core.aio import until


def test_an_answer_in_time_is_returned_and_its_timer_is_gone() -> None:
    async def scenario() -> tuple[str, bool]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()
        loop.call_later(0.01, future.set_result, "answer")
        got = await until(future, time.perf_counter() + 0.5)
        await asyncio.sleep(0.6)  # past the deadline: a timer left behind would fail on a done future
        return got, future.cancelled()

    assert asyncio.run(scenario()) == ("answer", False)


def test_no_answer_by_the_deadline_is_a_timeout_and_a_late_one_is_ignored() -> None:
    async def scenario() -> bool:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()
        with pytest.raises(TimeoutError):
            await until(future, time.perf_counter() + 0.05)
        return future.done()  # whoever answers late checks `done()` first (the dispatcher's listeners)

    assert asyncio.run(scenario())


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
