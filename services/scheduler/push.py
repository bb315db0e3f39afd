"""The dispatcher's side of the push path: one persistent connection per executor, frames out, answers
back (services/executor/push.py has the other side and the safety argument).

Every frame sent on a connection stays listed there until its answer arrives. If the connection drops
— the executor died, was stopped, or the network broke — each listed query's future fails with
`WorkerLost` and the dispatcher sends the query elsewhere; an answer can therefore not be lost in
flight, only computed twice (harmless: inference has no side effects, and the first answer wins).

Each connection opens with the hello that carries the suite's internal key (`infaas.wire.handshake`); it
leaves in the same write as the first queries. An executor that refuses it closes the connection, which
fails those queries over as a drop would.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np

from infaas.core.errors import BadRequest
from infaas.wire import local, loopback
from infaas.wire.connection import FramedProtocol, split_addr
from infaas.wire.handshake import encode_hello
from infaas.wire.messages import Reply, frame_id

log = logging.getLogger("infaas.scheduler")


class WorkerLost(Exception):
    """The query's worker cannot answer it: connection refused or dropped, or the worker refused it."""

    def __init__(self, worker: str, reason: str, *, refused: bool = False) -> None:
        super().__init__(f"{worker}: {reason}")
        self.worker = worker
        self.reason = reason
        self.refused = refused  # the worker is alive but will not run it (no such instance, draining)


Replied = tuple[Reply, dict[str, np.ndarray]]
"""A decoded reply frame: the reply and its outputs."""

Waiting = dict[str, asyncio.Future[Replied]]
"""The dispatcher's futures by query id, each resolved by its order's decoded reply."""


def resolve(waiting: Waiting, frame: bytes | memoryview, source: str) -> str | None:
    """Hand a reply frame, decoded once here, to the future waiting for its order (the tensors are
    views over an immutable chunk or a copy: safe to keep); returns the order's id. A reply that
    cannot be read fails its query as a lost worker, so that it is sent elsewhere; one whose id cannot
    be read tells nobody (None: its query's deadline covers it)."""
    try:
        decoded = Reply.decode(frame)
    except BadRequest as exc:
        log.warning("an unreadable answer from %s: %s", source, exc)
        qid = frame_id(frame)
        if qid is None:
            return None
        future = waiting.get(qid)
        if future is not None and not future.done():
            future.set_exception(WorkerLost(source, f"its answer could not be read ({exc})"))
        return qid
    qid = decoded[0].id
    future = waiting.get(qid)
    if future is not None and not future.done():  # else answered already, or no longer waited for
        future.set_result(decoded)
    return qid


class _Connection(FramedProtocol):
    def __init__(self, pool: PushPool, addr: str, *, max_frame_bytes: int) -> None:
        super().__init__(max_frame_bytes=max_frame_bytes)
        self.pool = pool
        self.addr = addr
        self.sent: set[str] = set()  # ids of queries sent here and not yet answered
        self.cut = False  # closed by this side (`PushPool.lose`): not news about the worker

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.send(self.pool.hello)  # before any query: the executor reads nothing else first

    def frame_received(self, frame: bytes | memoryview) -> None:
        qid = resolve(self.pool.waiting, frame, self.addr)
        if qid is not None:
            self.sent.discard(qid)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.pool.connections.get(self.addr) is self:
            del self.pool.connections[self.addr]
        reason = f"connection lost ({exc})" if exc else "connection closed"
        self.fail_sent(reason)
        if not self.cut and not self.pool.closed and self.pool.on_drop is not None:
            self.pool.on_drop(self.addr, reason)

    def fail_sent(self, reason: str) -> None:
        for qid in self.sent:
            future = self.pool.waiting.get(qid)
            if future is not None and not future.done():
                future.set_exception(WorkerLost(self.addr, reason))
        self.sent.clear()


class PushPool:
    """Connections to executors by push address, opened on first use and re-opened after a drop."""

    def __init__(
        self,
        waiting: Waiting,
        *,
        internal_key: str,
        max_frame_bytes: int,
        local_dir: Path | None = None,
    ) -> None:
        """`local_dir`: where executors of this host keep their Unix sockets (`infaas.wire.local`); a
        connection to one that has one there goes through it, else over TCP."""
        self.waiting = waiting  # the dispatcher's futures by query id: answers resolve them
        self.hello = encode_hello(internal_key)
        self.max_frame_bytes = max_frame_bytes
        self.local_dir = local_dir
        self.connections: dict[str, _Connection] = {}
        self.outstanding: Counter[str] = Counter()  # per address: sent (or being sent), not yet done
        self._connecting: dict[str, asyncio.Future[_Connection]] = {}
        self.closed = False
        self.on_drop: Callable[[str, str], None] | None = None
        """Told of each connection the executor's side dropped (address, why): a failure sign."""

    def in_flight(self, addr: str) -> int:
        return self.outstanding[addr]

    async def send(self, addr: str, qid: str, frame: bytes) -> None:
        """Send one query frame; its answer resolves `waiting[qid]`. Raises `WorkerLost` if the worker
        cannot be reached. The caller calls `done` once it stops waiting, whatever happened."""
        self.outstanding[addr] += 1  # counted from the start: queries choosing meanwhile see it
        conn = self.connections.get(addr)
        if conn is None or conn.closed:
            conn = await self._connect(addr)
        conn.sent.add(qid)
        conn.send(frame)

    async def _connect(self, addr: str) -> _Connection:
        pending = self._connecting.get(addr)
        if pending is not None:
            return await asyncio.shield(pending)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_Connection] = loop.create_future()
        self._connecting[addr] = future

        def protocol() -> _Connection:
            return _Connection(self, addr, max_frame_bytes=self.max_frame_bytes)

        try:
            if loopback.served_here(addr):  # an executor in this process (`executor_mode = "embedded"`)
                _, made = loopback.connect(addr, protocol)
                conn = cast(_Connection, made)
            else:
                near = None
                if self.local_dir is not None:  # an executor of this host: its Unix socket if it has one
                    near = await local.connect(protocol, self.local_dir, addr, timeout_s=2.0)
                if near is not None:
                    conn = cast(_Connection, near)
                else:
                    host, port = split_addr(addr)
                    connecting = loop.create_connection(protocol, host, port)
                    _, conn = await asyncio.wait_for(connecting, timeout=2.0)
            if self.closed:  # the pool was closed while this connection was being made
                conn.close()
                raise OSError("the dispatcher is stopping")
            self.connections[addr] = conn
            future.set_result(conn)
            return conn
        except (OSError, TimeoutError, ValueError) as exc:
            lost = WorkerLost(addr, f"cannot connect ({exc})")
            future.set_exception(lost)
            future.exception()  # retrieved: concurrent callers get it through the shield
            raise lost from exc
        finally:
            del self._connecting[addr]

    def done(self, qid: str, addr: str) -> None:
        """The dispatcher stopped waiting for `qid` (answered, lost, or past its deadline: a late answer
        is then simply dropped)."""
        self.outstanding[addr] -= 1
        if self.outstanding[addr] <= 0:
            del self.outstanding[addr]
        conn = self.connections.get(addr)
        if conn is not None:
            conn.sent.discard(qid)

    def lose(self, addr: str, reason: str) -> None:
        """The worker at `addr` was declared failed: its queries go elsewhere now, not at their deadline
        (a hung worker keeps its connection open), and the connection is cut."""
        conn = self.connections.pop(addr, None)
        if conn is not None:
            conn.cut = True
            conn.fail_sent(reason)
            conn.abort()

    async def aclose(self) -> None:
        self.closed = True
        for conn in list(self.connections.values()):
            conn.close()
        self.connections.clear()
