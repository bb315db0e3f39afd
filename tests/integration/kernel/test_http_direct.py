"""The direct lane of our HTTP protocol: requests an app answers without ASGI, checked on a real uvicorn
server over real sockets, with everything unusual still taking uvicorn's way."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from infaas.http.server import DirectApp, InfaasHttpProtocol
from infaas.processes.suite import free_port
from tests.integration.kernel.uvicorn_thread import serving


class Direct:
    """`POST /direct/<word>` answered directly (the body's length and the request id back); everything
    else, and whatever the protocol passes on, through ASGI, which says so in its answer."""

    max_body_bytes = 64

    def __init__(self) -> None:
        self.slow_answered = threading.Event()  # the server thread's answers to `/direct/slow`

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        content = orjson.dumps({"asgi": scope["path"], "len": len(body)})
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def direct_route(self, method: bytes, url: bytes) -> bytes | None:
        return url if method == b"POST" and url.startswith(b"/direct/") else None

    async def answer_direct(
        self, route: bytes, headers: dict[bytes, bytes], body: bytes | None, peer: str | None
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        if body is None:
            return 413, b'{"error":"too large"}', []
        if route == b"/direct/slow":
            await asyncio.sleep(0.3)  # a slow answer: the scenario, not a wait
            self.slow_answered.set()
        if route == b"/direct/bug":
            raise RuntimeError("a bug in the app")
        rid = headers.get(b"x-request-id", b"-").decode()
        content = orjson.dumps({"direct": route.decode(), "len": len(body), "rid": rid, "peer": peer})
        return 200, content, [(b"x-answered", b"direct")]


@pytest.fixture(scope="module")
def direct() -> Direct:
    return Direct()


@pytest.fixture(scope="module")
def port(direct: Direct) -> Iterator[int]:
    config = uvicorn.Config(
        direct,
        host="127.0.0.1",
        port=free_port(),
        http=InfaasHttpProtocol,
        proxy_headers=False,  # as the gateway runs: the middleware would hide the app's direct lane
        log_config=None,
    )
    with serving(config) as port:
        yield port


class Answer:
    def __init__(self, head: bytes, body: bytes) -> None:
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        self.body = body

    def json(self) -> Any:
        return orjson.loads(self.body)


class Conn:
    """A raw HTTP/1.1 client connection that reads answers by their content-length."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer(self) -> Answer:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        answer = Answer(head, b"")
        size = int(answer.headers["content-length"])
        while len(rest) < size:
            self.buffer = head + b"\r\n\r\n" + rest
            self._fill()
            head, _, rest = self.buffer.partition(b"\r\n\r\n")
        answer.body, self.buffer = rest[:size], rest[size:]
        return answer

    def closed_by_server(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def post(path: str, body: bytes, *extra: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "host: t", f"content-length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def test_the_app_is_recognised_as_direct() -> None:
    assert isinstance(Direct(), DirectApp)


def test_a_direct_request_is_answered_in_one_piece_and_the_connection_kept(port: int) -> None:
    conn = Conn(port)
    try:
        for i in range(3):
            conn.send(post("/direct/a", b"x" * (i + 1), "x-request-id: rid-7"))
            answer = conn.answer()
            assert answer.status == 200 and answer.headers["x-answered"] == "direct"
            assert answer.headers["content-type"] == "application/json" and "date" in answer.headers
            assert "connection" not in answer.headers
            assert answer.json() == {"direct": "/direct/a", "len": i + 1, "rid": "rid-7", "peer": "127.0.0.1"}
    finally:
        conn.close()


def test_other_requests_take_the_asgi_way(port: int) -> None:
    conn = Conn(port)
    try:
        conn.send(b"GET /direct/a HTTP/1.1\r\nhost: t\r\n\r\n")
        assert conn.answer().json() == {"asgi": "/direct/a", "len": 0}
        conn.send(post("/elsewhere", b"abc"))
        assert conn.answer().json() == {"asgi": "/elsewhere", "len": 3}
        # Expect: 100-continue is uvicorn's to handle: the interim answer, then the app's
        conn.send(b"POST /direct/a HTTP/1.1\r\nhost: t\r\ncontent-length: 2\r\nexpect: 100-continue\r\n\r\n")
        assert conn.sock.recv(64).startswith(b"HTTP/1.1 100 Continue")
        conn.send(b"hi")
        assert conn.answer().json() == {"asgi": "/direct/a", "len": 2}
    finally:
        conn.close()


def test_a_body_in_pieces_is_collected(port: int) -> None:
    conn = Conn(port)
    try:
        request = post("/direct/a", b"0123456789" * 5)
        conn.send(request[:40])
        time.sleep(0.05)  # apart in time, so that the server reads the pieces separately: the scenario
        conn.send(request[40:70])
        time.sleep(0.05)
        conn.send(request[70:])
        assert conn.answer().json()["len"] == 50
        chunked = b"POST /direct/b HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n"
        conn.send(chunked + b"3\r\nabc\r\n")
        time.sleep(0.05)
        conn.send(b"2\r\nde\r\n0\r\n\r\n")
        assert conn.answer().json()["len"] == 5
    finally:
        conn.close()


def test_pipelined_requests_are_answered_in_order(port: int) -> None:
    """The second arrives while the first (slow) is being answered: it queues behind it, uvicorn's way."""
    conn = Conn(port)
    try:
        conn.send(post("/direct/slow", b"1") + post("/direct/a", b"22") + post("/other", b"333"))
        first, second, third = conn.answer(), conn.answer(), conn.answer()
        assert first.json() == {"direct": "/direct/slow", "len": 1, "rid": "-", "peer": "127.0.0.1"}
        assert second.json() == {"asgi": "/direct/a", "len": 2}
        assert third.json() == {"asgi": "/other", "len": 3}
        conn.send(post("/direct/a", b"4444"))  # and the connection goes on, directly again
        assert conn.answer().json()["direct"] == "/direct/a"
    finally:
        conn.close()


def test_an_oversized_body_is_refused_and_the_connection_ended(port: int) -> None:
    conn = Conn(port)
    try:
        conn.send(post("/direct/a", b"y" * 65)[:-65])  # only the head: refused on content-length
        answer = conn.answer()
        assert answer.status == 413 and answer.headers["connection"] == "close"
        assert conn.closed_by_server()
    finally:
        conn.close()
    conn = Conn(port)
    try:  # no content-length: refused once the chunks pass the limit
        conn.send(b"POST /direct/a HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n")
        conn.send(b"40\r\n" + b"z" * 64 + b"\r\n")
        conn.send(b"1\r\nz\r\n")
        answer = conn.answer()
        assert answer.status == 413 and conn.closed_by_server()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "request_bytes",
    [
        post("/direct/a", b"abc", "connection: close"),
        post("/direct/a", b"abc").replace(b"HTTP/1.1", b"HTTP/1.0"),
    ],
)
def test_a_request_that_ends_its_connection_gets_connection_close(port: int, request_bytes: bytes) -> None:
    conn = Conn(port)
    try:
        conn.send(request_bytes)
        answer = conn.answer()
        assert answer.status == 200 and answer.headers["connection"] == "close"
        assert conn.closed_by_server()
    finally:
        conn.close()


def test_a_failing_answer_is_a_500_json_and_the_server_goes_on(port: int, direct: Direct) -> None:
    conn = Conn(port)
    try:
        conn.send(post("/direct/bug", b"x"))
        answer = conn.answer()
        assert answer.status == 500 and answer.json()["error"]["code"] == "internal"
        assert conn.closed_by_server()
    finally:
        conn.close()
    direct.slow_answered.clear()
    gone = Conn(port)
    gone.send(post("/direct/slow", b"x"))  # the client leaves before its answer
    gone.close()
    assert direct.slow_answered.wait(timeout=10), "the slow request was never answered"
    conn = Conn(port)
    try:
        conn.send(post("/direct/a", b"ok"))
        assert conn.answer().json()["len"] == 2
    finally:
        conn.close()


def test_the_gateway_is_served_with_its_query_lane_direct(tmp_path: Any) -> None:
    """What `infaas serve gateway` hands uvicorn: once uvicorn has wrapped it as configured, the app the
    protocol sees is still the lane, so the query routes take the direct way (a wrapper would hide it)."""
    from infaas.core.config import Settings
    from infaas_cli.main import server_options

    options = server_options("gateway", Settings(var_dir=tmp_path))
    assert options["http"] is InfaasHttpProtocol
    config = uvicorn.Config(**options)
    config.load()
    assert isinstance(config.loaded_app, DirectApp)
    assert config.loaded_app.direct_route(b"POST", b"/v1/apps/shop/infer") is not None
