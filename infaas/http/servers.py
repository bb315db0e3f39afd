"""How our HTTP services run under uvicorn: a server that wakes once a second when idle, and two
services in one process for `executor_mode = "embedded"`.

**The idle tick.** uvicorn's server loop wakes ten times a second to check whether it should stop and,
every tenth time, to refresh the `date` header. Each wake-up of an idle Python process costs the core
~50–100 µs on these machines, and one landing while a query waits for the core delays it
(docs/benchmarks.md, "Where the tail comes from"): across the suite's five HTTP processes that was ~50
wake-ups a second for nothing. `Server` ticks once a second — the `date` header is still refreshed each
second — and a stop request (a signal, or `stop()`) wakes it at once instead of at its next tick.

**Two services in one process.** The gateway and the executor it hosts when `executor_mode =
"embedded"` (`infaas.wire.loopback` carries their query frames), on one event loop. Each keeps its own
port, app, lifespan and server: the planner still loads and unloads instances through the executor's
API, and the executor still heartbeats and pulses as a worker of its own. One signal stops both, the
gateway first (no new queries), then the executor (whose unload answers or refuses what it still holds).
If either server ends by itself — a lifespan that failed, a port taken — the other is stopped too, so
the process exits and its supervisor starts both again: a gateway without its executor, or the reverse,
would be a worker that looks alive and serves nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Generator
from types import FrameType
from typing import Any

import uvicorn
from uvicorn._compat import asyncio_run

log = logging.getLogger("infaas")


TICK_S = 1.0
"""How often an idle server wakes: for the `date` header, which has a resolution of one second."""


class Server(uvicorn.Server):
    """uvicorn's server with a one-second idle tick and a stop that takes effect at once."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tick: asyncio.Future[None] | None = None

    async def main_loop(self) -> None:
        self._loop = loop = asyncio.get_running_loop()
        # `on_tick(0)`: uvicorn refreshes the date header when the counter is a multiple of ten.
        while not await self.on_tick(0):
            self._tick = tick = loop.create_future()
            timer = loop.call_later(TICK_S, _settle, tick)
            try:
                await tick
            finally:
                timer.cancel()
                self._tick = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._wake()

    def stop(self) -> None:
        """Stop serving now, as a signal would (from the loop's thread or a signal handler)."""
        self.should_exit = True
        self._wake()

    def _wake(self) -> None:
        loop, tick = self._loop, self._tick
        if loop is not None and tick is not None and not loop.is_closed():
            # Thread-safe: a signal handler runs between two bytecodes of whatever the loop runs.
            loop.call_soon_threadsafe(_settle, tick)


def _settle(tick: asyncio.Future[None]) -> None:
    if not tick.done():
        tick.set_result(None)


def serve(options: dict[str, Any]) -> None:
    """Run one service until a signal: `uvicorn.run` with `Server` (no reload, one worker)."""
    config = uvicorn.Config(**options)
    server = Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises a captured Ctrl-C once stopped
        server.run()
    if not server.started:
        sys.exit(3)  # as uvicorn.run does when the server did not start (a port in use, a failed lifespan)


class _Shared(Server):
    """A server that leaves the process's signals to `serve_together`: each uvicorn server installs
    its own handlers and restores the previous ones on exit, so with two, one would never hear them."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def serve_together(front: dict[str, Any], back: dict[str, Any]) -> None:
    """Run `back` (started first) and `front` (the public one) until a signal, or until either ends."""
    front_server = _Shared(uvicorn.Config(**front))
    back_server = _Shared(uvicorn.Config(**back))

    def on_signal(_sig: int, _frame: FrameType | None) -> None:
        if front_server.should_exit:  # a second signal: stop now, as uvicorn does on a second Ctrl-C
            front_server.force_exit = back_server.force_exit = True
        front_server.stop()

    async def main() -> None:
        back_task = asyncio.create_task(back_server.serve(), name="back-server")
        while not back_server.started and not back_task.done():
            await asyncio.sleep(0.02)
        front_task = asyncio.create_task(front_server.serve(), name="front-server")
        await asyncio.wait({front_task, back_task}, return_when=asyncio.FIRST_COMPLETED)
        if back_task.done() and not front_task.done():
            log.error("the embedded executor's server stopped; stopping the gateway with it")
        front_server.stop()
        await asyncio.gather(front_task, return_exceptions=True)
        back_server.stop()
        for task in (front_task, back_task):
            with contextlib.suppress(asyncio.CancelledError):
                await task  # re-raises what ended it (a SystemExit from a port in use, say)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio_run(main(), loop_factory=front_server.config.get_loop_factory())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
