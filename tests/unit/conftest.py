"""Unit tests see no INFAAS_* environment and cannot touch the network.

Settings come only from what each test passes. A test that connects or binds a socket (directly, through
`socket.create_connection`, or through asyncio's `create_connection`/`create_server`) fails: it belongs in
`tests/integration/<area>/`. `socket.socketpair` stays allowed: every asyncio event loop makes one for
its self-pipe, and on Linux it neither binds nor connects.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest


@pytest.fixture(autouse=True)
def _no_infaas_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("INFAAS_"):
            monkeypatch.delenv(name)


class SocketGuard:
    """Refuses every network socket a unit test opens, and remembers the attempts: code that swallows the
    refusal (a retry loop, a server thread) still fails its test at teardown."""

    def __init__(self, test: str) -> None:
        self.test = test
        self.attempts: list[str] = []

    def refuse(self, what: str) -> NoReturn:
        self.attempts.append(what)
        pytest.fail(
            f"{self.test} opened a network socket ({what}); unit tests cannot: move it to tests/integration/",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def socket_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[SocketGuard]:
    guard = SocketGuard(request.node.nodeid)

    def socket_method(name: str) -> Any:
        def refused(sock: socket.socket, address: Any, *_: Any) -> NoReturn:
            sock.close()  # a refused socket is closed here: callers that fail past it would leak it
            guard.refuse(f"socket.{name}({address!r})")

        return refused

    def loop_method(name: str) -> Any:
        async def refused(_loop: asyncio.AbstractEventLoop, *args: Any, **_kwargs: Any) -> NoReturn:
            guard.refuse(f"loop.{name}{args[1:]!r}")

        return refused

    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, socket_method(name))
    for name in ("create_connection", "create_server"):
        monkeypatch.setattr(asyncio.BaseEventLoop, name, loop_method(name))
    yield guard
    if guard.attempts:
        pytest.fail(f"{guard.test} opened network sockets: {'; '.join(guard.attempts)}", pytrace=False)
