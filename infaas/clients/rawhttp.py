"""A minimal HTTP/1.1 client for one hot hop (gateway → scheduler): a pool of persistent connections,
pre-encoded request heads, Content-Length bodies only.

httpx is the typed client everywhere else; on the query path its per-request machinery costs several
times what this hop needs (`bench/diagnostics/baseline_latency.py` measures it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RawResponse:
    status_code: int
    content: bytes


class ConnectionLost(Exception):
    """The server closed or broke the connection before a whole response arrived."""


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.last_used = time.monotonic()

    async def request(self, head: bytes, body: bytes) -> RawResponse:
        self.writer.write(head + str(len(body)).encode() + b"\r\n\r\n" + body)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionLost("connection closed")
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ConnectionLost(f"bad status line {status_line[:60]!r}")
        status = int(parts[1])
        length = 0
        keep_alive = True
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"content-length":
                length = int(value.strip())
            elif key == b"connection" and value.strip().lower() == b"close":
                keep_alive = False
            elif key == b"transfer-encoding":
                raise ConnectionLost("chunked responses are not supported on this hop")
        content = await self.reader.readexactly(length) if length else b""
        if not keep_alive:
            self.close()
        self.last_used = time.monotonic()
        return RawResponse(status, content)

    @property
    def closed(self) -> bool:
        return self.writer.is_closing()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class RawHTTPPool:
    """POSTs to one host over up to `size` kept-alive connections."""

    def __init__(
        self, host: str, port: int, *, size: int = 64, timeout_s: float = 30.0, idle_s: float = 4.0
    ) -> None:
        self.host = host
        self.port = port
        self.timeout_s = timeout_s
        # Servers close idle keep-alive connections (uvicorn after 5 s); retire ours a little earlier.
        self.idle_s = idle_s
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(size)

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> RawResponse:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            + "Content-Length: "
        ).encode()
        async with self._slots:
            for attempt in (1, 2):
                # The retry always uses a fresh connection: another idle one may be just as stale.
                conn = self._take_idle() if attempt == 1 else None
                conn = conn or await self._connect()
                try:
                    response = await asyncio.wait_for(conn.request(head, body), self.timeout_s)
                except (ConnectionLost, ConnectionError, asyncio.IncompleteReadError):
                    conn.close()
                    # A kept-alive connection may have been closed by the server while idle: retry
                    # once on a fresh one (the request never reached a handler that answered).
                    if attempt == 2:
                        raise
                    continue
                except BaseException:
                    conn.close()
                    raise
                if not conn.closed:
                    self._idle.append(conn)
                return response
        raise AssertionError("unreachable")

    def _take_idle(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if now - conn.last_used < self.idle_s and not conn.closed:
                return conn
            conn.close()
        return None

    async def _connect(self) -> _Connection:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 2.0)
        return _Connection(reader, writer)

    async def aclose(self) -> None:
        while self._idle:
            self._idle.pop().close()
