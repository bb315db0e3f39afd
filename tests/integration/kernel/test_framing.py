"""Length-prefixed frames over a real loopback TCP connection: frames split across reads, many frames in
one read, writes of one loop turn coalesced, and an oversized frame closing the connection."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from infaas.wire.connection import FramedProtocol, split_addr
from tests.polling import async_wait_for


class Recorder(FramedProtocol):
    def __init__(self, *, max_frame_bytes: int = 1 << 20) -> None:
        super().__init__(max_frame_bytes=max_frame_bytes)
        self.frames: list[bytes] = []
        self.received = 0  # bytes read off the socket so far
        self.lost = asyncio.Event()
        self.got = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        super().data_received(data)

    def frame_received(self, frame: bytes | memoryview) -> None:
        self.frames.append(bytes(frame))
        self.got.set()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.lost.set()


async def _pair(max_frame_bytes: int = 1 << 20) -> tuple[Recorder, socket.socket, asyncio.Server]:
    """A Recorder serving one connection, and a raw client socket to feed it bytes however we like."""
    server_side: list[Recorder] = []

    def factory() -> Recorder:
        server_side.append(Recorder(max_frame_bytes=max_frame_bytes))
        return server_side[-1]

    server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await async_wait_for(lambda: server_side, what="the connection accepted")
    return server_side[0], raw, server


async def _read(rec: Recorder, n: int) -> None:
    await async_wait_for(lambda: rec.received == n, what=f"{n} bytes read")


def _framed(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


async def test_frames_split_across_reads_and_packed_into_one_arrive_whole_and_in_order() -> None:
    rec, raw, server = await _pair()
    try:
        payloads = [b"a" * n for n in (0, 1, 3, 1000, 70_000)] + [bytes(range(256))]
        stream = b"".join(_framed(p) for p in payloads)
        # Byte by byte through the first frames (the length prefix itself split), each byte read on its own
        # before the next is sent, then the rest at once.
        for i in range(12):
            raw.sendall(stream[i : i + 1])
            await _read(rec, i + 1)
        raw.sendall(stream[12:])
        await async_wait_for(lambda: len(rec.frames) == len(payloads), what="every frame")
        assert rec.frames == payloads
    finally:
        raw.close()
        server.close()


async def test_a_frame_over_the_limit_closes_the_connection() -> None:
    rec, raw, server = await _pair(max_frame_bytes=100)
    try:
        raw.sendall(_framed(b"ok") + struct.pack(">I", 101) + b"x" * 101)
        await asyncio.wait_for(rec.lost.wait(), 5)
        assert rec.frames == [b"ok"] and rec.closed
    finally:
        raw.close()
        server.close()


async def test_sends_of_one_loop_turn_leave_as_one_write_and_arrive_framed() -> None:
    loop = asyncio.get_running_loop()
    accepted: list[Recorder] = []

    def accept() -> Recorder:
        accepted.append(Recorder())
        return accepted[-1]

    server = await loop.create_server(accept, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        _, client = await loop.create_connection(Recorder, "127.0.0.1", port)
        await async_wait_for(lambda: accepted, what="the connection accepted")
        writes: list[bytes] = []
        assert client.transport is not None
        real_write = client.transport.write

        def counting_write(data: bytes | bytearray | memoryview) -> None:
            writes.append(bytes(data))
            real_write(data)

        client.transport.write = counting_write  # type: ignore[method-assign]
        for i in range(5):
            client.send(f"q{i}".encode())
        await async_wait_for(lambda: len(accepted[0].frames) == 5, what="five frames")
        assert len(writes) == 1, "five sends in one loop turn must leave in one write"
        assert accepted[0].frames == [b"q0", b"q1", b"q2", b"q3", b"q4"]
        client.close()
        await asyncio.wait_for(client.lost.wait(), 5)
        with pytest.raises(ConnectionResetError):
            client.send(b"late")
    finally:
        server.close()


@pytest.mark.parametrize(
    ("addr", "expected"), [("10.0.0.7:8093", ("10.0.0.7", 8093)), ("[::1]:5", ("::1", 5))]
)
def test_split_addr(addr: str, expected: tuple[str, int]) -> None:
    assert split_addr(addr) == expected


@pytest.mark.parametrize("addr", ["nohost", ":80", "host:http", ""])
def test_split_addr_refuses_what_is_not_host_port(addr: str) -> None:
    with pytest.raises(ValueError, match="host:port"):
        split_addr(addr)
