"""The services' HTTP protocol: a response's head and first body chunk leave in one write, and HTTP
itself is uvicorn's, unchanged — checked on a real uvicorn server over real sockets."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.flow_control import FlowControl

from infaas.http.server import CoalescingCycle, CoalescingHttpToolsProtocol
from infaas.processes.suite import free_port
from tests.integration.kernel.uvicorn_thread import serving


async def app(scope: Scope, receive: Receive, send: Send) -> None:  # noqa: ARG001
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/boom":
        raise RuntimeError("the app failed")
    if path == "/stream":  # chunked: no content-length, three body messages
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for part in (b"one,", b"two,", b"three"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    body = b'{"ok":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """A real uvicorn with our protocol, in a thread; yields its port."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=free_port(),
        http=CoalescingHttpToolsProtocol,
        log_config=None,  # as the services run it: uvicorn's own config would rewire the loggers
    )
    with serving(config) as port:
        yield port


def _exchange(port: int, request: bytes, *, expect: int = 1) -> bytes:
    """Send raw bytes; read until `expect` responses are complete or the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while data.count(b"HTTP/1.1 ") < expect or not _complete(data, expect):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def _complete(data: bytes, expect: int) -> bool:
    if b"transfer-encoding: chunked" in data:
        return data.endswith(b"0\r\n\r\n")
    return data.count(b'{"ok":true}') >= expect or b"Internal Server Error" in data


def test_a_response_arrives_whole_with_its_head(port: int) -> None:
    response = _exchange(port, b"GET /x HTTP/1.1\r\nhost: t\r\n\r\n")
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"content-length: 11" in head and body == b'{"ok":true}'


def test_head_requests_get_the_head_only(port: int) -> None:
    # A GET after the HEAD on the same connection: a body sent for the HEAD would sit between the two heads.
    head_then_get = (
        b"HEAD /x HTTP/1.1\r\nhost: t\r\n\r\nGET /x HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n"
    )
    head, _, after = _exchange(port, head_then_get, expect=2).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"content-length: 11" in head
    assert after.startswith(b"HTTP/1.1 200 OK") and after.endswith(b'\r\n\r\n{"ok":true}')


def test_chunked_streams_errors_and_pipelined_requests_are_plain_http(port: int) -> None:
    streamed = _exchange(port, b"GET /stream HTTP/1.1\r\nhost: t\r\n\r\n")
    assert b"transfer-encoding: chunked" in streamed
    assert streamed.endswith(b"4\r\none,\r\n4\r\ntwo,\r\n5\r\nthree\r\n0\r\n\r\n")
    failed = _exchange(port, b"GET /boom HTTP/1.1\r\nhost: t\r\n\r\n")
    assert failed.startswith(b"HTTP/1.1 500")
    two = _exchange(port, b"GET /a HTTP/1.1\r\nhost: t\r\n\r\nGET /b HTTP/1.1\r\nhost: t\r\n\r\n", expect=2)
    assert two.count(b"HTTP/1.1 200 OK") == 2 and two.count(b'{"ok":true}') == 2


def test_the_head_and_the_body_leave_in_one_write() -> None:
    """The cycle's writes, recorded on a loopback socket pair: one per response, holding both parts."""

    async def scenario() -> list[bytes]:
        loop = asyncio.get_running_loop()
        left, right = socket.socketpair()
        writes: list[bytes] = []
        transport, _ = await loop.create_connection(asyncio.Protocol, sock=left)
        real_write = transport.write

        def recording(data: bytes | bytearray | memoryview) -> None:
            writes.append(bytes(data))
            real_write(data)

        transport.write = recording  # type: ignore[method-assign]
        cycle = _cycle_on(transport)
        head = [(b"content-length", b"2")]
        await cycle.send({"type": "http.response.start", "status": 200, "headers": head})
        assert writes == []  # held until the body comes
        await cycle.send({"type": "http.response.body", "body": b"hi"})
        transport.close()
        await asyncio.sleep(0)
        right.close()
        return writes

    writes = asyncio.run(scenario())
    assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200 OK") and writes[0].endswith(b"\r\n\r\nhi")


def _cycle_on(transport: asyncio.Transport) -> CoalescingCycle:
    """A request cycle as uvicorn's protocol makes one, writing to `transport`."""
    return CoalescingCycle(
        scope={"type": "http", "method": "GET", "path": "/", "headers": []},  # type: ignore[typeddict-item]
        transport=transport,
        flow=FlowControl(transport),
        logger=logging.getLogger("test"),
        access_logger=logging.getLogger("test.access"),
        access_log=False,
        default_headers=[],
        message_event=asyncio.Event(),
        expect_100_continue=False,
        keep_alive=True,
        on_response=lambda: None,
    )


def test_uvicorn_still_starts_each_cycle_through_the_hook_we_override() -> None:
    """If uvicorn renamed it, cycles would silently stop coalescing: fail here instead."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert "_start_asgi_task" in vars(HttpToolsProtocol)
    assert "send" in vars(CoalescingCycle.__mro__[1])
