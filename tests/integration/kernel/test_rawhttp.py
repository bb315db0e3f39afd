"""The gateway's raw HTTP/1.1 client against a real socket server on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from infaas.clients.rawhttp import ConnectionLost, RawHTTPPool
from tests.polling import async_wait_for


class Server:
    """Echo server: answers each POST with its body; counts connections; can misbehave on demand."""

    def __init__(self) -> None:
        self.connections = 0
        self.mode = "ok"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                length = int(
                    next(
                        line.split(b":")[1]
                        for line in request.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                body = await reader.readexactly(length)
                if self.mode == "chunked":
                    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                elif self.mode == "close":
                    writer.write(
                        b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: "
                        + str(len(body)).encode()
                        + b"\r\n\r\n"
                        + body
                    )
                    await writer.drain()
                    writer.close()
                    return
                else:
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                    )
                await writer.drain()
                if self.mode == "idle_close":  # a keep-alive timeout: the server closes without saying so
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


Served = tuple[Server, RawHTTPPool, asyncio.Server]


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    server = Server()
    tcp = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = tcp.sockets[0].getsockname()[1]
    pool = RawHTTPPool("127.0.0.1", port, size=4, timeout_s=5)
    yield server, pool, tcp
    await pool.aclose()
    tcp.close()
    await tcp.wait_closed()


async def test_requests_reuse_kept_alive_connections(
    served: Served,
) -> None:
    server, pool, _ = served
    for i in range(20):
        response = await pool.post("/x", f"body-{i}".encode(), {"X-Test": "1"})
        assert (response.status_code, response.content) == (200, f"body-{i}".encode())
    assert server.connections == 1
    answers = await asyncio.gather(*(pool.post("/x", bytes([i]) * 1000, {}) for i in range(16)))
    assert [a.content for a in answers] == [bytes([i]) * 1000 for i in range(16)]
    assert server.connections <= 4  # never more connections than the pool size


async def test_connection_close_is_honoured_and_a_fresh_connection_used(
    served: Served,
) -> None:
    server, pool, _ = served
    server.mode = "close"
    first = await pool.post("/x", b"a", {})
    second = await pool.post("/x", b"b", {})
    assert (first.status_code, first.content, second.content) == (201, b"a", b"b")
    assert server.connections == 2


async def test_chunked_answers_are_refused_not_misread(
    served: Served,
) -> None:
    server, pool, _ = served
    server.mode = "chunked"
    with pytest.raises(ConnectionLost):
        await pool.post("/x", b"a", {})


async def test_nothing_listening_raises_a_connection_error() -> None:
    pool = RawHTTPPool("127.0.0.1", 1, size=1, timeout_s=1)
    with pytest.raises(OSError):
        await pool.post("/x", b"a", {})


async def test_connections_the_server_closed_while_idle_are_replaced(served: Served) -> None:
    server, pool, _ = served
    server.mode = "idle_close"
    for i in range(5):
        response = await pool.post("/x", f"{i}".encode(), {})
        assert response.content == f"{i}".encode()
        # The server's close has reached our idle connection before the next request takes it.
        await async_wait_for(
            lambda: all(c.reader.at_eof() for c in pool._idle), what="the server's close reached the pool"
        )
    assert server.connections == 5  # each request after the first needed (and got) a fresh connection
