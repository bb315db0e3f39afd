"""Length-prefixed wire frames over a persistent TCP connection (the dispatcher ↔ executor push path).

Each message is `[4-byte big-endian length][wire frame]` (`infaas.wire.frames`). Both ends are asyncio
`Protocol`s rather than streams: a frame is handled in `data_received` without a task switch, and
frames written in one event-loop turn leave in one `write` — on these machines every syscall that wakes
the peer costs ~100 µs, so under load a batch of answers is one wake-up, not one per query.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import struct
from typing import cast

log = logging.getLogger("infaas.framing")

_LEN = struct.Struct(">I")


class FramedProtocol(asyncio.Protocol, abc.ABC):
    """Splits the byte stream into frames and coalesces writes; subclasses handle `frame_received`."""

    def __init__(self, *, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.transport: asyncio.WriteTransport | None = None
        self._buf = bytearray()
        self._out: list[bytes] = []
        self.closed = False
        self.frames_behind = False
        """While `frame_received` runs: whether more of the stream came in the same read behind the
        frame (a receiver may then wait to handle them together)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement the interface without subclassing asyncio's classes.
        self.transport = cast(asyncio.WriteTransport, transport)

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002 (subclasses report it)
        self.closed = True
        self._out.clear()

    @abc.abstractmethod
    def frame_received(self, frame: bytes | memoryview) -> None:
        """One whole frame: a view over an immutable chunk or a copy, safe to keep."""

    def data_received(self, data: bytes) -> None:
        if self._buf:
            self._buf += data
            self._split(self._buf, copy=True)
            return
        # The common case: the buffer is empty and `data` holds whole frames. Hand out views of it
        # (immutable bytes: safe to keep) and buffer only a trailing partial frame.
        self._split(data, copy=False)

    def _split(self, buf: bytes | bytearray, *, copy: bool) -> None:
        view = memoryview(buf)
        pos, end = 0, len(buf)
        while end - pos >= _LEN.size:
            (size,) = _LEN.unpack_from(buf, pos)
            if size > self.max_frame_bytes:
                log.warning(
                    "closing a connection that sent a %d-byte frame (limit %d)", size, self.max_frame_bytes
                )
                if copy:
                    view.release()
                self.abort()
                return
            if end - pos - _LEN.size < size:
                break
            start = pos + _LEN.size
            frame = bytes(view[start : start + size]) if copy else view[start : start + size]
            pos = start + size
            self.frames_behind = pos < end
            try:
                self.frame_received(frame)
            except Exception:  # one bad frame must not take the connection's other queries down
                log.exception("handling a frame failed")
        if copy:
            view.release()  # frames were copied out; a live view would forbid resizing the buffer
            del self._buf[:pos]
        elif pos < end:
            self._buf += buf[pos:]

    def send(self, frame: bytes) -> None:
        """Queue `frame`; everything queued in this loop turn is written together at its end."""
        if self.closed:
            raise ConnectionResetError("the connection is closed")
        if not self._out:
            asyncio.get_running_loop().call_soon(self.flush)
        self._out.append(_LEN.pack(len(frame)))
        self._out.append(frame)

    def flush(self) -> None:
        """Write what `send` queued: at the end of the loop turn (scheduled by `send`), or now."""
        if not self._out or self.transport is None or self.transport.is_closing():
            return
        data = b"".join(self._out) if len(self._out) > 2 else self._out[0] + self._out[1]
        self._out.clear()
        self.transport.write(data)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.flush()
            self.transport.close()


def split_addr(addr: str) -> tuple[str, int]:
    """`host:port` (the executor advertises its push address in this form)."""
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"not a host:port address: {addr!r}")
    return host.strip("[]"), int(port)
