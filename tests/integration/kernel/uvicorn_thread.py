"""A real uvicorn server in a thread, for tests of our HTTP protocol over real sockets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from tests.polling import wait_for


@contextmanager
def serving(config: uvicorn.Config) -> Iterator[int]:
    """Run `config`'s server until the block ends; yields its port."""
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    wait_for(lambda: srv.started, what="uvicorn started")
    try:
        yield config.port
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
