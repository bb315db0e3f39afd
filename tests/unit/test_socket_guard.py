"""The unit-test socket guard (tests/unit/conftest.py) refuses the network and leaves event loops working."""

from __future__ import annotations

import asyncio
import socket

import pytest

from tests.unit.conftest import SocketGuard


def test_connecting_to_loopback_fails_the_test(socket_guard: SocketGuard) -> None:
    with pytest.raises(pytest.fail.Exception, match="opened a network socket"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert socket_guard.attempts == ["socket.connect(('127.0.0.1', 9))"]
    socket_guard.attempts.clear()  # this test wanted the refusal; the teardown check would fail it too


def test_binding_and_connect_ex_fail_the_test(socket_guard: SocketGuard) -> None:
    with socket.socket() as sock:
        with pytest.raises(pytest.fail.Exception):
            sock.bind(("127.0.0.1", 0))
        with pytest.raises(pytest.fail.Exception):
            sock.connect_ex(("127.0.0.1", 9))
    assert len(socket_guard.attempts) == 2
    socket_guard.attempts.clear()


async def test_asyncio_servers_and_connections_fail_the_test(socket_guard: SocketGuard) -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(pytest.fail.Exception):
        await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
    with pytest.raises(pytest.fail.Exception):
        await asyncio.open_connection("127.0.0.1", 9)
    assert len(socket_guard.attempts) == 2
    socket_guard.attempts.clear()


def test_a_swallowed_refusal_still_fails_at_teardown(socket_guard: SocketGuard) -> None:
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    except BaseException:  # code under test that retries or logs and goes on
        pass
    assert socket_guard.attempts  # left in place, the teardown would fail this test
    socket_guard.attempts.clear()


async def test_event_loops_and_socketpairs_still_work() -> None:
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"x")
        assert right.recv(1) == b"x"
    assert await asyncio.sleep(0, result=7) == 7
    await asyncio.to_thread(lambda: None)  # a thread and a call_soon_threadsafe wake-up through the self-pipe
