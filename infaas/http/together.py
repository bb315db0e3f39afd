"""Two HTTP services in one process, on one event loop: the gateway and the executor it hosts when
`executor_mode = "embedded"` (`infaas.wire.loopback` carries their query frames).

Each keeps its own port, app, lifespan and uvicorn server: the planner still loads and unloads
instances through the executor's API, and the executor still heartbeats and pulses as a worker of its
own. One signal stops both, the gateway first (no new queries), then the executor (whose unload
answers or refuses what it still holds). If either server ends by itself — a lifespan that failed, a
port taken — the other is stopped too, so the process exits and its supervisor starts both again: a
gateway without its executor, or the reverse, would be a worker that looks alive and serves nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Generator
from types import FrameType
from typing import Any

import uvicorn
from uvicorn._compat import asyncio_run

log = logging.getLogger("infaas")


class _Server(uvicorn.Server):
    """A server that leaves the process's signals to `serve_together`: each uvicorn server installs
    its own handlers and restores the previous ones on exit, so with two, one would never hear them."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def serve_together(front: dict[str, Any], back: dict[str, Any]) -> None:
    """Run `back` (started first) and `front` (the public one) until a signal, or until either ends."""
    front_server = _Server(uvicorn.Config(**front))
    back_server = _Server(uvicorn.Config(**back))

    def on_signal(_sig: int, _frame: FrameType | None) -> None:
        if front_server.should_exit:  # a second signal: stop now, as uvicorn does on a second Ctrl-C
            front_server.force_exit = back_server.force_exit = True
        front_server.should_exit = True

    async def main() -> None:
        back_task = asyncio.create_task(back_server.serve(), name="back-server")
        while not back_server.started and not back_task.done():
            await asyncio.sleep(0.02)
        front_task = asyncio.create_task(front_server.serve(), name="front-server")
        await asyncio.wait({front_task, back_task}, return_when=asyncio.FIRST_COMPLETED)
        if back_task.done() and not front_task.done():
            log.error("the embedded executor's server stopped; stopping the gateway with it")
        front_server.should_exit = True
        await asyncio.gather(front_task, return_exceptions=True)
        back_server.should_exit = True
        for task in (front_task, back_task):
            with contextlib.suppress(asyncio.CancelledError):
                await task  # re-raises what ended it (a SystemExit from a port in use, say)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio_run(main(), loop_factory=front_server.config.get_loop_factory())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
