"""Push connections inside one process: when an executor runs in its dispatcher's own process
(`executor_mode = "embedded"`: the gateway hosts the first CPU executor), a query frame reaches it by a
function call instead of through a socket.

Over TCP on one host a query wakes four processes: the gateway reads it, the executor reads its frame,
the gateway reads the answer, the client reads the response. Two of those wake-ups and the two sockets'
system calls are the hop the loopback removes; on these machines each wake-up costs ~100 µs and on a
busy core it is a wait for the core (docs/benchmarks.md, "Where a query's own time goes").

Everything else is the push path as it is over TCP: the same protocols on both ends, the hello with
the internal key first, the same frames, the same loss rule (a connection that closes fails the
queries sent on it, and the dispatcher sends them elsewhere). A write hands the peer a new immutable
`bytes` object (never the writer's buffer), which is what frames are read as views of
(`infaas.wire.connection`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

Factory = Callable[[], asyncio.Protocol]

_ENDPOINTS: dict[str, Factory] = {}
"""Push addresses served in this process, and the protocol each connection gets on the executor's end."""


def listen(addr: str, factory: Factory) -> None:
    """Serve `addr` in this process as well: a dispatcher here connecting to it gets a loopback."""
    _ENDPOINTS[addr] = factory


def stop(addr: str) -> None:
    """No new loopback connections to `addr` (those open stay open, as a closed TCP server's do)."""
    _ENDPOINTS.pop(addr, None)


def served_here(addr: str) -> bool:
    return addr in _ENDPOINTS


def connect(addr: str, factory: Factory) -> tuple[asyncio.Transport, asyncio.Protocol]:
    """A connection to the endpoint at `addr` in this process, as `loop.create_connection` returns
    one; raises `ConnectionRefusedError` when nothing here serves it."""
    server_factory = _ENDPOINTS.get(addr)
    if server_factory is None:
        raise ConnectionRefusedError(f"nothing in this process serves {addr}")
    loop = asyncio.get_running_loop()
    client, server = factory(), server_factory()
    near, far = _End(loop, client), _End(loop, server)
    near.peer, far.peer = far, near
    server.connection_made(far)  # the executor's end first: the client's hello may be written at once
    client.connection_made(near)
    return near, client


class _End(asyncio.Transport):
    """One end of a loopback connection: what it writes is the peer protocol's next `data_received`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self.loop = loop
        self.protocol = protocol
        self.peer: _End | None = None
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self.closing or self.peer is None:
            return  # as a closed socket's transport: the bytes go nowhere, the loss is reported
        # Delivered now, not on a later turn: both writers already batch a turn's frames into one
        # write (`FramedProtocol.flush`). An executor that answers a lone frame at once
        # (`services.executor.consumers.serve_now`) writes from inside its frame handling, so the
        # dispatcher's handler runs nested in it; that handler only resolves a future (`push.resolve`).
        self.peer.protocol.data_received(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def can_write_eof(self) -> bool:
        return False

    def close(self) -> None:
        self._shut()

    def abort(self) -> None:
        self._shut()

    def _shut(self) -> None:
        """Both ends learn of it on the next turn, as with a socket the peer closed."""
        if self.closing:
            return
        for end in (self,) if self.peer is None else (self, self.peer):
            end.closing = True  # the two close together: neither end is left half-open
            self.loop.call_soon(end.protocol.connection_lost, None)

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("loopback", 0) if name == "peername" else default

    def pause_reading(self) -> None:
        """Frames are handled as they are delivered; there is no read side to pause."""

    def resume_reading(self) -> None:
        """See `pause_reading`."""

    def is_reading(self) -> bool:
        return not self.closing

    def get_write_buffer_size(self) -> int:
        return 0
