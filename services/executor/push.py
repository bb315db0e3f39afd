"""The executor's push endpoint: dispatchers send query frames over a persistent TCP connection and
get each answer back on it (`infaas.wire.connection`), instead of through a Redis stream and a reply channel.

A query then wakes four processes instead of eight (docs/benchmarks.md). It is as safe as the streams:
the dispatcher keeps every frame until it is answered, and re-sends it elsewhere when this worker
refuses it (no such instance, draining, failed) or the connection drops (this process died or was
stopped). A worker that hangs is covered by the query's deadline, as it is with streams. A dispatcher on
the same host reaches the endpoint through a Unix socket beside the TCP port (`infaas.wire.local`).

Only holders of the suite's internal key may send queries: a connection's first frame must be its hello
(`infaas.wire.handshake`). Until it came, `frame_received` is the check; after it, the class's own
method again, so the query path after the handshake is the one it always was.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from infaas.core.errors import BadRequest
from infaas.wire import local, loopback
from infaas.wire.connection import FramedProtocol
from infaas.wire.handshake import hello_matches
from infaas.wire.messages import Order, Reply, frame_id
from services.executor import metrics
from services.executor.instances import InstanceHost
from services.executor.queries import Delivery, refusal

log = logging.getLogger("infaas.executor")


class PushConnection(FramedProtocol):
    def __init__(self, host: InstanceHost, *, internal_key: bytes, max_frame_bytes: int) -> None:
        super().__init__(max_frame_bytes=max_frame_bytes)
        self.host = host
        self.internal_key = internal_key
        # Shadows the method until the hello came (an instance attribute is looked up first either way).
        self.frame_received = self._hello_received  # type: ignore[method-assign]

    def _hello_received(self, frame: bytes | memoryview) -> None:
        if not hello_matches(frame, self.internal_key):
            metrics.PUSH_REFUSED.inc()
            peer = self.transport.get_extra_info("peername") if self.transport is not None else None
            why = "no internal key configured" if not self.internal_key else "no hello with the internal key"
            log.warning("closing a push connection from %s: %s", peer, why, extra={"refused": "internal_key"})
            # Frames that arrived behind it in the same read are dropped, not read as queries.
            self.frame_received = _ignore  # type: ignore[method-assign,assignment]
            self.abort()
            return
        del self.frame_received  # authenticated: frames go to the class's method from now on

    def frame_received(self, frame: bytes | memoryview) -> None:
        try:
            order, inputs = Order.decode(frame)
        except BadRequest as exc:
            self._reject(frame, f"malformed query frame: {exc}")
            return
        if not inputs:
            self._reject(frame, "the query carries no inputs")
            return
        rows = int(next(iter(inputs.values())).shape[0])
        delivery = Delivery(entry_id=b"", order=order, inputs=inputs, rows=rows, conn=self)
        why_not = self.host.accept(delivery, alone=not self.frames_behind)
        if why_not is not None:
            self.send(refusal(order.id, self.host.worker_id, why_not))

    def _reject(self, frame: bytes | memoryview, error: str) -> None:
        """A frame this worker cannot run anywhere: answer its id with the error (not a refusal: another
        worker would fail alike), or drop the connection if not even the id can be read."""
        metrics.FAILURES.labels("unknown", "malformed").inc()
        qid = frame_id(frame)
        if qid is None:
            log.warning("closing a push connection that sent an unreadable frame")
            self.abort()
            return
        self.send(Reply(qid, self.host.worker_id, "failed", error=error).encode())


def _ignore(_frame: bytes | memoryview) -> None:
    """What a refused connection does with the frames that arrived behind its first."""


@dataclass
class PushServer:
    """The push endpoint's listeners: TCP, and the same-host Unix socket where there is one."""

    tcp: asyncio.AbstractServer
    local: local.LocalServer | None = None

    def close(self) -> None:
        """No new connections; those open stay open."""
        self.tcp.close()
        if self.local is not None:
            self.local.close()


async def start_server(
    host: InstanceHost,
    *,
    bind: str,
    port: int,
    advertise_url: str,
    internal_key: str,
    max_frame_bytes: int,
    in_process: bool = False,
    local_dir: Path | None = None,
) -> tuple[PushServer, str]:
    """Listen for dispatchers; returns the listeners and the `host:port` to advertise in heartbeats
    (port 0 picks a free one: the address travels in the metadata store, so nobody needs to know it
    ahead). `in_process`: a dispatcher in this process reaches the address without a socket
    (`infaas.wire.loopback`); others still connect over TCP. Stop that with `loopback.stop`.
    `local_dir`: also listen on the address's Unix socket there, for dispatchers of this host."""
    loop = asyncio.get_running_loop()
    key = internal_key.encode()

    def protocol() -> PushConnection:
        return PushConnection(host, internal_key=key, max_frame_bytes=max_frame_bytes)

    server = await loop.create_server(protocol, bind, port, reuse_address=True)
    bound_port = server.sockets[0].getsockname()[1]
    advertised_host = urlsplit(advertise_url).hostname or "127.0.0.1"
    addr = f"{advertised_host}:{bound_port}"
    if in_process:
        loopback.listen(addr, protocol)
    near = await local.serve(protocol, local_dir, addr) if local_dir is not None else None
    return PushServer(server, near), addr
