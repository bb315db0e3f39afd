"""A real uvicorn server in a thread, for tests of our HTTP protocol over real sockets."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def serving(config: uvicorn.Config) -> Iterator[int]:
    """Run `config`'s server until the block ends; yields its port."""
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield config.port
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
