"""The virtual-time event loop (tests/unit/virtual_time.py): timers run in order and at once, I/O still
wakes the loop, and the loop is back on real time afterwards."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tests.unit.virtual_time import VirtualTime, install


async def test_an_hour_of_timers_runs_in_order_with_no_wait(virtual_time: VirtualTime) -> None:
    loop, fired = asyncio.get_running_loop(), []
    start = virtual_time()
    for delay in (3600.0, 0.5, 60.0):
        loop.call_later(delay, fired.append, delay)
    await virtual_time.advance(3600.5)
    assert fired == [0.5, 60.0, 3600.0]
    assert virtual_time() == pytest.approx(start + 3600.5) and loop.time() == virtual_time()


async def test_a_timeout_fires_once_nothing_else_can_run(virtual_time: VirtualTime) -> None:
    start = virtual_time()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.Event().wait(), 10.0)
    assert virtual_time() == pytest.approx(start + 10.0)


async def test_a_thread_s_callback_wakes_the_loop_before_the_clock_moves(virtual_time: VirtualTime) -> None:
    loop, woken = asyncio.get_running_loop(), asyncio.Event()
    start = virtual_time()
    threading.Thread(target=loop.call_soon_threadsafe, args=(woken.set,)).start()
    await woken.wait()  # no timer scheduled: the loop waits for the thread's wake-up, as on real time
    assert virtual_time() == start


async def test_restoring_puts_the_loop_back_on_real_time() -> None:
    loop = asyncio.get_running_loop()
    virtual, restore = install(loop)
    await virtual.advance(100.0)
    restore()
    assert abs(loop.time() - time.monotonic()) < 1.0
