"""Unit tests see no INFAAS_* environment and cannot touch the network.

Settings come only from what each test passes. A test that connects or binds a socket (directly, through
`socket.create_connection`, or through asyncio's `create_connection`/`create_server`) fails: it belongs in
`tests/integration/<area>/`. `socket.socketpair` stays allowed: every asyncio event loop makes one for
its self-pipe, and on Linux it neither binds nor connects.

Nor do unit tests train a model: the demo models (`demo_models`, `small_model` in tests/conftest.py) take
minutes to train, so a unit test that asks for them, or reaches their training another way, fails. A unit
test builds the tiny model it needs in milliseconds (an `onnx.helper` graph, a seeded torch module); a test
whose subject is the training itself belongs in `tests/integration/`.

Nor do they wait on real timers: a test whose subject takes time (a reload every 0.1 s, a short wait for a
source that hangs) runs its event loop on virtual time (`virtual_time`) and moves that clock instead.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any, NoReturn

import pytest

from tests.unit.virtual_time import VirtualTime, install

NO_TRAINING = (
    "unit tests train no model (the demo models take minutes): build a tiny one in the test, or move a "
    "test whose subject is training to tests/integration/"
)


@pytest.fixture(scope="session")
def demo_models() -> NoReturn:
    pytest.fail(f"asked for the demo models: {NO_TRAINING}", pytrace=False)


@pytest.fixture(scope="session")
def small_model() -> NoReturn:
    pytest.fail(f"asked for a demo model: {NO_TRAINING}", pytrace=False)


@pytest.fixture(autouse=True)
def _no_demo_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """`build_demo_models` called directly fails where it would train (a cache it finds complete is
    read, not trained: that costs milliseconds)."""
    module = sys.modules.get("infaas_cli.demo_models")  # loaded by whichever test module imports it
    if module is not None:

        def refused(*_args: Any, **_kwargs: Any) -> NoReturn:
            pytest.fail(f"trained a demo model: {NO_TRAINING}", pytrace=False)

        monkeypatch.setattr(module, "_train", refused)


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


@pytest.fixture
async def virtual_time() -> AsyncIterator[VirtualTime]:
    """The test's event loop on virtual time (tests/unit/virtual_time.py): timers fire without waiting."""
    clock, restore = install(asyncio.get_running_loop())
    yield clock
    restore()
