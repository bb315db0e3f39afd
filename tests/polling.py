"""Waiting on a condition, not on the clock: poll it until it holds, fail the test at a deadline.

A fixed sleep followed by an assert is either too short on a loaded machine or longer than needed; these
return as soon as the condition holds, and the deadline only bounds how long a broken run waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")


def wait_for(condition: Callable[[], T], *, what: str, timeout_s: float = 10.0, every_s: float = 0.02) -> T:
    """Poll `condition` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout_s
    while not (got := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s (last: {got!r})"
        time.sleep(every_s)
    return got


@overload
async def async_wait_for(
    condition: Callable[[], Awaitable[T]], *, what: str, timeout_s: float = ..., every_s: float = ...
) -> T: ...
@overload
async def async_wait_for(
    condition: Callable[[], T], *, what: str, timeout_s: float = ..., every_s: float = ...
) -> T: ...
async def async_wait_for(
    condition: Callable[[], object], *, what: str, timeout_s: float = 10.0, every_s: float = 0.02
) -> object:
    """`wait_for` inside an event loop: `condition` may be a plain or an async function."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = condition()
        if isinstance(got, Awaitable):
            got = await got
        if got:
            return got
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s (last: {got!r})"
        await asyncio.sleep(every_s)
