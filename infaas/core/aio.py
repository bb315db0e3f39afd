"""Stopping background tasks for good.

A background loop here looks like `while True: try: await <Redis call> except Exception: log; await
asyncio.sleep(...)`. Cancelling it is not always enough: a cancellation that lands inside a library
call can come out as an ordinary exception (on Python 3.11, `asyncio.timeout` — which redis-py's reads
use — turns a cancellation that arrives as its own deadline passes into `TimeoutError`), the loop's
`except Exception` takes it, and the task runs on with its cancellation spent. `await task` then never
returns: a test's teardown or a service's shutdown hangs. `stop_tasks` cancels again until the task
has really ended.

`raise_if_cancelling` is for loops that retry on errors (a Redis subscription taken again after a loss):
an error raised while the loop's task is being cancelled is that cancel, come out of a library as
another exception (redis-py can report a cancel during a read as "Connection closed by server"), and
the loop must end rather than retry.

`until` awaits a future up to a deadline, for the query path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, TypeVar

log = logging.getLogger("infaas.aio")

T = TypeVar("T")


async def stop_tasks(*tasks: asyncio.Task[Any] | None, grace_s: float = 0.0, retry_s: float = 0.2) -> None:
    """Let the tasks end by themselves for up to `grace_s`, then cancel them — again every `retry_s`
    while one is still running — and return once all have ended. An exception a task ended with is
    logged, not raised (this is for shutdown paths)."""
    live = {t for t in tasks if t is not None}
    if grace_s > 0 and live:
        await asyncio.wait(live, timeout=grace_s)
    while pending := {t for t in live if not t.done()}:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=retry_s)
    for task in live:
        if not task.cancelled() and task.exception() is not None:
            log.error("task %s ended with an error", task.get_name(), exc_info=task.exception())


def raise_if_cancelling(exc: BaseException) -> None:
    """Raise `CancelledError` (from `exc`) when the current task is being cancelled; else return."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError from exc


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


async def until(future: asyncio.Future[T], deadline: float) -> T:
    """The future's result, or `TimeoutError` at `deadline` (a `time.perf_counter` time). `asyncio.wait_for`
    does the same with a timeout context and a task check per call; a timer on the future is all this
    needs. Cancelling the caller cancels the future, as with `wait_for`."""
    loop = asyncio.get_running_loop()
    timer = loop.call_at(loop.time() + max(0.0, deadline - time.perf_counter()), _expire, future)
    try:
        return await future
    finally:
        timer.cancel()
