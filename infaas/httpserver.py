"""The HTTP protocol our services run under uvicorn: httptools, with each response's head and first body
chunk written together.

uvicorn writes a response's status line and headers when the app sends `http.response.start`, and the
body in a second write when it sends `http.response.body`. Each write to an idle socket is a syscall
that may wake the client twice (head, then body); on these machines a wake-up costs ~100 µs of CPU
(docs/benchmarks.md). Holding the head until the body comes makes it one write. Everything else —
parsing, keep-alive, flow control, chunked bodies, errors — is uvicorn's own code, run unchanged: only
the transport its cycle writes to is wrapped for the two calls.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn._types import ASGI3Application, ASGISendEvent
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle


class _Capture:
    """Stands in for the transport while uvicorn writes a response head: keeps the bytes."""

    def __init__(self, real: asyncio.Transport) -> None:
        self.real = real
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class _Prefixed:
    """Stands in for the transport while uvicorn writes a body chunk: the held head goes first, in the
    same write (or on its own, before a close, if uvicorn writes no body, as for HEAD)."""

    def __init__(self, real: asyncio.Transport, head: bytes) -> None:
        self.real = real
        self.head: bytes | None = head

    def write(self, data: bytes) -> None:
        if self.head is not None:
            data, self.head = self.head + data, None
        self.real.write(data)

    def flush(self) -> None:
        if self.head is not None:
            self.real.write(self.head)
            self.head = None

    def close(self) -> None:
        self.flush()
        self.real.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class CoalescingCycle(RequestResponseCycle):
    _held: bytes | None = None

    async def send(self, message: ASGISendEvent) -> None:
        real = self.transport
        if message["type"] == "http.response.start" and not self.response_started:
            capture = _Capture(real)
            self.transport = capture  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = real
            self._held = b"".join(capture.parts)
            return
        held, self._held = self._held, None
        if held is None:
            await super().send(message)
            return
        prefixed = _Prefixed(real, held)
        self.transport = prefixed  # type: ignore[assignment]
        try:
            await super().send(message)
        finally:
            self.transport = real
            prefixed.flush()


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose request cycles coalesce a response's first write."""

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: ASGI3Application) -> None:
        cycle.__class__ = CoalescingCycle
        super()._start_asgi_task(cycle, app)
