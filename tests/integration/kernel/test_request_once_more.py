"""Internal calls survive a kept-alive connection that died under them: an idempotent request is sent once
more on a fresh connection, anything else fails as before. The server here answers the first request on
each connection and closes the connection on the second without a word (as a restarting service does)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import httpx
import pytest

from infaas.clients.base import request_once_more, request_once_more_sync
from infaas.processes.suite import free_port

OK = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"ok":true}'


def _serve(listener: socket.socket, stop: threading.Event) -> None:
    listener.settimeout(0.1)  # an accept() that a closing listener would not wake
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        with conn:
            conn.recv(65536)  # the first request
            conn.sendall(OK)
            conn.recv(65536)  # the second: dropped, the connection closed


@pytest.fixture
def url() -> Iterator[str]:
    port = free_port()
    listener = socket.create_server(("127.0.0.1", port))
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(listener, stop), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


async def test_an_idempotent_request_is_sent_again_on_a_fresh_connection(url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        assert (await request_once_more(http, "GET", "/a")).status_code == 200
        assert (await request_once_more(http, "GET", "/b")).status_code == 200  # conn 1 died: sent on conn 2
        assert (await request_once_more(http, "POST", "/verify", retry=True)).status_code == 200


async def test_a_request_that_is_not_idempotent_is_not_sent_twice(url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        await request_once_more(http, "GET", "/a")
        with pytest.raises(httpx.RemoteProtocolError):
            await request_once_more(http, "POST", "/b")


def test_the_blocking_client_alike(url: str) -> None:
    with httpx.Client(base_url=url) as http:
        assert request_once_more_sync(http, "GET", "/a").status_code == 200
        assert request_once_more_sync(http, "GET", "/b").status_code == 200
        with pytest.raises(httpx.RemoteProtocolError):
            request_once_more_sync(http, "POST", "/c")
