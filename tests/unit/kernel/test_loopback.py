"""The in-process push connection (`infaas.wire.loopback`): the dispatcher's `PushPool` and the
executor's `PushConnection`, unchanged, joined by a function call instead of a socket. The hello with the
internal key, frames both ways, refusals, losses and closes behave as over TCP
(tests/integration/kernel/test_framing.py has the TCP side)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import numpy as np
import pytest

from infaas.wire import loopback
from infaas.wire.connection import FramedProtocol
from services.executor.instances import InstanceHost
from services.executor.push import PushConnection
from services.scheduler.push import PushPool, Waiting, WorkerLost
from tests.orders import order

ADDR = "127.0.0.1:1"  # never bound: a frame that reached the executor came through the loopback
KEY = "int_loopback_test"


class _Recorder(FramedProtocol):
    def __init__(self) -> None:
        super().__init__(max_frame_bytes=1 << 20)
        self.frames: list[bytes] = []
        self.lost = 0

    def frame_received(self, frame: bytes | memoryview) -> None:
        self.frames.append(bytes(frame))

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.lost += 1


def _host() -> InstanceHost:
    # No instance is loaded, so nothing touches Redis or the artifact store: every query is refused.
    return InstanceHost(worker_id="cpu-test-1", redis=cast(Any, None), artifacts=cast(Any, None))


def _executor(host: InstanceHost, key: str = KEY) -> loopback.Factory:
    return lambda: PushConnection(host, internal_key=key.encode(), max_frame_bytes=1 << 20)


def _query(qid: str) -> bytes:
    return order(qid, variant="absent.v1").encode({"x": np.ones((1, 3), dtype=np.float32)})


@pytest.fixture(autouse=True)
def _no_endpoint_left() -> Any:
    yield
    loopback.stop(ADDR)


async def test_a_query_reaches_the_executor_in_process_and_its_answer_comes_back() -> None:
    loopback.listen(ADDR, _executor(_host()))
    waiting: Waiting = {}
    pool = PushPool(waiting, internal_key=KEY, max_frame_bytes=1 << 20)
    futures = {}
    for qid in ("q1", "q2"):
        futures[qid] = waiting[qid] = asyncio.get_running_loop().create_future()
        await pool.send(ADDR, qid, _query(qid))
    answers = {qid: (await asyncio.wait_for(f, 1.0))[0] for qid, f in futures.items()}  # decoded on arrival
    # The executor ran its checks on each frame (here: no such instance) and answered each by its id.
    assert {qid: a.error for qid, a in answers.items() if a.outcome == "refused"} == {
        "q1": "no instance of absent.v1 on this worker",
        "q2": "no instance of absent.v1 on this worker",
    }
    assert all(a.worker == "cpu-test-1" for a in answers.values())
    assert pool.in_flight(ADDR) == 2  # the dispatcher's own count, until it says it stopped waiting
    await pool.aclose()


async def test_a_dispatcher_without_the_internal_key_is_cut_off_and_its_queries_fail_over() -> None:
    loopback.listen(ADDR, _executor(_host()))
    waiting: Waiting = {}
    pool = PushPool(waiting, internal_key="int_wrong", max_frame_bytes=1 << 20)
    dropped: list[tuple[str, str]] = []
    pool.on_drop = lambda addr, why: dropped.append((addr, why))
    future = waiting["q"] = asyncio.get_running_loop().create_future()
    await pool.send(ADDR, "q", _query("q"))
    with pytest.raises(WorkerLost):
        await asyncio.wait_for(future, 1.0)
    assert [addr for addr, _ in dropped] == [ADDR]  # closed by the executor's side: a failure sign
    assert ADDR not in pool.connections


async def test_an_address_not_served_in_this_process_is_not_taken_for_one() -> None:
    assert not loopback.served_here(ADDR)
    with pytest.raises(ConnectionRefusedError):
        loopback.connect(ADDR, _Recorder)
    loopback.listen(ADDR, _Recorder)
    loopback.stop(ADDR)  # stopped: new connections are refused again
    with pytest.raises(ConnectionRefusedError):
        loopback.connect(ADDR, _Recorder)


async def test_frames_go_both_ways_whole_and_in_order_and_a_close_reaches_both_ends() -> None:
    server = _Recorder()
    loopback.listen(ADDR, lambda: server)
    transport, made = loopback.connect(ADDR, _Recorder)
    client = cast(_Recorder, made)
    for i in range(3):
        client.send(b"to-server-%d" % i)
    server.send(b"to-client")
    assert server.frames == [] and client.frames == []  # sent at the end of the turn, as over TCP
    await asyncio.sleep(0)
    assert server.frames == [b"to-server-0", b"to-server-1", b"to-server-2"]
    assert client.frames == [b"to-client"]
    assert server.transport is not None and server.transport.get_extra_info("peername") == ("loopback", 0)

    transport.close()
    assert transport.is_closing() and server.transport.is_closing()
    await asyncio.sleep(0)
    assert (client.lost, server.lost) == (1, 1)
    transport.write(b"\x00\x00\x00\x01x")  # after the close: goes nowhere, as on a closed socket
    assert server.frames == [b"to-server-0", b"to-server-1", b"to-server-2"]
    server.transport.abort()  # closing again is a no-op on both ends
    await asyncio.sleep(0)
    assert (client.lost, server.lost) == (1, 1)
