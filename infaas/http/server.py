"""The HTTP protocol our services run under uvicorn: httptools, with each response's head and first body
chunk written together, and a direct lane for the requests an app answers without ASGI.

uvicorn writes a response's status line and headers when the app sends `http.response.start`, and the
body in a second write when it sends `http.response.body`. Each write to an idle socket is a syscall
that may wake the client twice (head, then body); on these machines a wake-up costs ~100 µs of CPU
(docs/benchmarks.md). Holding the head until the body comes makes it one write. Everything else —
parsing, keep-alive, flow control, chunked bodies, errors — is uvicorn's own code, run unchanged: only
the transport its cycle writes to is wrapped for the two calls.

Direct requests (`InfaasHttpProtocol`): an app that has `direct_route` (the gateway's `QueryLane`) names
the requests it answers from a method, a raw URL and a body — the two query routes. Those skip uvicorn's
request cycle: no ASGI scope, no cycle object with its event, no receive/send messages, no per-header
regex checks on a head we build ourselves; the body is collected as httptools delivers it and one task
answers it with one write. That machinery cost 21–24 µs of CPU per query, under a tenth of the gateway's
(`bench/diagnostics/http_lane.py`, docs/benchmarks.md). Anything unusual — `Expect: 100-continue`, an
upgrade, a
request pipelined behind one not yet answered, a concurrency limit — goes uvicorn's way, where the app's
ASGI entry answers it the same.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, runtime_checkable

from uvicorn._types import ASGI3Application, ASGISendEvent
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle

from infaas.http.app import internal_error_body

Headers = list[tuple[bytes, bytes]]


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


@runtime_checkable
class DirectApp(Protocol):
    """An ASGI app that answers some requests without ASGI."""

    max_body_bytes: int

    def direct_route(self, method: bytes, url: bytes) -> Any | None:
        """What `answer_direct` needs to answer this request, or None to pass it through ASGI."""

    async def answer_direct(
        self, route: Any, headers: dict[bytes, bytes], body: bytes | None, peer: str | None
    ) -> tuple[int, bytes, Headers]:
        """(status, JSON body, extra headers) for a direct request; `body` None when it was larger than
        `max_body_bytes`; `peer` the connection's remote host. Renders every error itself."""


def declares_more_than(headers: dict[bytes, bytes], limit: int) -> bool:
    """Whether a request's Content-Length (the first, in `headers`) says its body is over `limit`; a
    missing or malformed one says nothing (the bytes are counted as they arrive)."""
    declared = headers.get(b"content-length")
    return declared is not None and declared.isdigit() and int(declared) > limit


class _NoEvent:
    """uvicorn's protocol wakes a cycle's reader on disconnect; a direct cycle has none."""

    @staticmethod
    def set() -> None:
        return None


class _DirectCycle:
    """A direct request on its way: the attributes uvicorn's protocol reads off `self.cycle` (keep-alive,
    disconnected, response_complete, message_event) and the body as it arrives."""

    __slots__ = (
        "disconnected",
        "headers",
        "keep_alive",
        "parts",
        "response_complete",
        "route",
        "size",
        "started",
    )
    message_event = _NoEvent()

    def __init__(self, route: Any, headers: dict[bytes, bytes], keep_alive: bool) -> None:
        self.route = route
        self.headers = headers
        self.keep_alive = keep_alive
        self.parts: list[bytes] = []
        self.size = 0
        self.started = False  # its answer is under way: later body bytes are dropped
        self.disconnected = False
        self.response_complete = False


class InfaasHttpProtocol(CoalescingHttpToolsProtocol):
    """The coalescing protocol, plus the direct lane for an app that is a `DirectApp`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.direct: DirectApp | None = self.app if isinstance(self.app, DirectApp) else None

    def on_headers_complete(self) -> None:
        direct = self.direct
        cycle: RequestResponseCycle | _DirectCycle = self.cycle
        if (
            direct is not None
            and (cycle is None or cycle.response_complete)  # else uvicorn queues it behind that one
            and not self.expect_100_continue
            and self.limit_concurrency is None
            and not self.parser.should_upgrade()
        ):
            route = direct.direct_route(self.parser.get_method(), self.url)
            if route is not None:
                self._begin_direct(direct, route)
                return
        super().on_headers_complete()

    def _begin_direct(self, direct: DirectApp, route: Any) -> None:
        headers = dict(reversed(self.headers))  # the first of a repeated header wins
        keep_alive = self.parser.get_http_version() != "1.0" and self.parser.should_keep_alive()
        cycle = _DirectCycle(route, headers, keep_alive)
        self.cycle = cycle  # type: ignore[assignment]
        if declares_more_than(headers, direct.max_body_bytes):
            self._answer(cycle, None)  # at once: no point in reading what will be refused

    def on_body(self, body: bytes) -> None:
        cycle: RequestResponseCycle | _DirectCycle = self.cycle
        if type(cycle) is not _DirectCycle:
            super().on_body(body)
            return
        if cycle.started:
            return
        cycle.size += len(body)
        assert self.direct is not None
        if cycle.size > self.direct.max_body_bytes:
            cycle.parts.clear()
            self._answer(cycle, None)
            return
        cycle.parts.append(body)

    def on_message_complete(self) -> None:
        cycle: RequestResponseCycle | _DirectCycle = self.cycle
        if type(cycle) is not _DirectCycle:
            super().on_message_complete()
            return
        if not cycle.started:
            parts = cycle.parts
            self._answer(cycle, parts[0] if len(parts) == 1 else b"".join(parts))

    def _answer(self, cycle: _DirectCycle, body: bytes | None) -> None:
        cycle.started = True
        if body is None:
            cycle.keep_alive = False  # the rest of an oversized body is never read: the connection ends
        task = self.loop.create_task(self._serve(cycle, body))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    async def _serve(self, cycle: _DirectCycle, body: bytes | None) -> None:
        assert self.direct is not None
        try:
            peer = self.client[0] if self.client else None
            status, content, extra = await self.direct.answer_direct(cycle.route, cycle.headers, body, peer)
        except Exception:  # answer_direct renders its errors; this guards the connection against a bug
            self.logger.exception("direct request failed")
            status, content, extra = 500, internal_error_body("server"), []
            cycle.keep_alive = False
        if cycle.disconnected:
            return
        if self.flow.write_paused:  # a client that does not read its answers is not written ahead of
            await self.flow.drain()
            if cycle.disconnected:
                return
        parts = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            parts += (name, b": ", value, b"\r\n")
        parts.append(b"content-type: application/json\r\ncontent-length: %d\r\n" % len(content))
        for name, value in extra:
            parts += (name, b": ", value, b"\r\n")
        if not cycle.keep_alive:
            parts.append(b"connection: close\r\n")
        parts += (b"\r\n", content)
        self.transport.write(b"".join(parts))
        cycle.response_complete = True
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()  # uvicorn's: the next pipelined request, or the keep-alive timer
