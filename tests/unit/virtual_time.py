"""The running event loop on virtual time: its timers fire in order, and none is waited for.

A unit test whose subject takes time (a cache reloading every 0.1 s, a 10 ms wait for a source that hangs)
moves the loop's clock instead of sleeping. Whenever the loop has nothing ready and would block until its
next timer, the clock jumps to that timer. So `await asyncio.sleep(0.55)` returns at once, after every
timer due within those 0.55 s has run in order, and `asyncio.wait_for(..., 0.01)` times out as soon as
nothing else can run. Code given `clock=virtual_time` (or reading `loop.time()`) sees the same time.

Readiness still counts: a loop with I/O ready (a thread's `call_soon_threadsafe`) handles it before the
clock moves, and a loop with no timer at all waits for I/O as it always does.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable

Events = list[tuple[selectors.SelectorKey, int]]


class VirtualTime:
    """The loop's clock (call it for the time) and the way to move it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.now = loop.time()  # timers already scheduled keep their place
        self.loop = loop

    def __call__(self) -> float:
        return self.now

    async def advance(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass, running every timer due meanwhile."""
        await asyncio.sleep(seconds)

    def select(self, real: Callable[[float | None], Events]) -> Callable[[float | None], Events]:
        def virtual(timeout: float | None = None) -> Events:
            if timeout is None:  # no timer scheduled: only I/O can wake the loop
                return real(None)
            events = real(0)
            if not events and timeout > 0:
                self.now += timeout  # the next timer's time: the loop runs it next
            return events

        return virtual


def install(loop: asyncio.AbstractEventLoop) -> tuple[VirtualTime, Callable[[], None]]:
    """Put `loop` on virtual time; returns its clock and how to put it back on real time."""
    selector = getattr(loop, "_selector", None)
    assert isinstance(selector, selectors.BaseSelector), f"not a selector event loop: {loop!r}"
    virtual = VirtualTime(loop)
    real_select = selector.select
    selector.select = virtual.select(real_select)  # type: ignore[method-assign,assignment]
    loop.time = virtual  # type: ignore[method-assign]

    def restore() -> None:
        del selector.select
        del loop.time

    return virtual, restore
