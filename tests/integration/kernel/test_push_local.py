"""The push path between two processes of one host over a Unix socket (`infaas.wire.local`): the
executor's real endpoint (`services.executor.push.start_server`) and the dispatcher's `PushPool`, over
real sockets. A dispatcher with the executor's run directory goes through the socket; one without it,
or one that finds no live socket or a directory others can write to, goes over TCP and is answered all
the same."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from infaas.wire import local
from infaas.wire.messages import Reply
from services.executor.instances import InstanceHost
from services.executor.push import PushServer, start_server
from services.scheduler.push import PushPool, Waiting, WorkerLost
from tests.orders import order

KEY = "int_local_test"


def _host() -> InstanceHost:
    # No instance is loaded, so nothing touches Redis or the artifact store: every query is refused.
    return InstanceHost(worker_id="cpu-local-1", redis=cast(Any, None), artifacts=cast(Any, None))


def _query(qid: str) -> bytes:
    return order(qid, variant="absent.v1").encode({"x": np.ones((1, 3), dtype=np.float32)})


async def _endpoint(run: Path | None) -> tuple[PushServer, str]:
    return await start_server(
        _host(),
        bind="127.0.0.1",
        port=0,
        advertise_url="http://127.0.0.1",
        internal_key=KEY,
        max_frame_bytes=1 << 20,
        local_dir=run,
    )


async def _ask(pool: PushPool, waiting: Waiting, addr: str, qid: str) -> Reply:
    future = waiting[qid] = asyncio.get_running_loop().create_future()
    await pool.send(addr, qid, _query(qid))
    header, _ = await asyncio.wait_for(future, 2.0)
    pool.done(qid, addr)
    return header


def _family(pool: PushPool, addr: str) -> int:
    conn = pool.connections[addr]
    assert conn.transport is not None
    sock = conn.transport.get_extra_info("socket")
    return int(sock.family)


async def _answered_over(addr: str, run: Path | None) -> int:
    """Ask `addr`'s executor once through a new pool (with `run` as its local dir): the address family
    the answer came over."""
    waiting: Waiting = {}
    pool = PushPool(waiting, internal_key=KEY, max_frame_bytes=1 << 20, local_dir=run)
    try:
        answer = await _ask(pool, waiting, addr, "q1")
        assert answer.worker == "cpu-local-1" and answer.outcome == "refused"
        assert answer.error == "no instance of absent.v1 on this worker"
        return _family(pool, addr)
    finally:
        await pool.aclose()


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return tmp_path / "run"


async def test_a_dispatcher_of_the_same_host_goes_through_the_socket_and_is_answered(run: Path) -> None:
    server, addr = await _endpoint(run)
    assert server.local is not None
    path = local.socket_path(run, addr)
    assert path is not None and path.is_socket()
    assert oct(run.stat().st_mode & 0o777) == "0o700"
    assert await _answered_over(addr, run) == socket.AF_UNIX
    server.close()
    assert not path.exists()  # the name goes with the listener


async def test_without_the_run_directory_the_dispatcher_uses_tcp(run: Path) -> None:
    server, addr = await _endpoint(run)
    assert await _answered_over(addr, None) == socket.AF_INET
    server.close()


async def test_a_socket_left_by_a_dead_executor_sends_the_dispatcher_over_tcp(run: Path) -> None:
    server, addr = await _endpoint(None)  # this executor listens on TCP only
    run.mkdir(mode=0o700)
    path = local.socket_path(run, addr)
    assert path is not None
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))  # bound, never listening, then closed: what a killed process leaves
    stale.close()
    assert await _answered_over(addr, run) == socket.AF_INET
    server.close()


async def test_a_new_executor_on_the_port_replaces_a_stale_socket(run: Path) -> None:
    first, addr = await _endpoint(run)
    path = local.socket_path(run, addr)
    assert path is not None
    inode = path.stat().st_ino
    first.tcp.close()  # the port is free again; the socket file stays, as after a SIGKILL
    await first.tcp.wait_closed()
    port = int(addr.rpartition(":")[2])
    second, again = await start_server(
        _host(),
        bind="127.0.0.1",
        port=port,
        advertise_url="http://127.0.0.1",
        internal_key=KEY,
        max_frame_bytes=1 << 20,
        local_dir=run,
    )
    assert again == addr and path.stat().st_ino != inode
    first.close()  # the first one's close leaves the second one's socket alone
    assert path.is_socket()
    assert await _answered_over(addr, run) == socket.AF_UNIX
    second.close()


async def test_a_directory_others_can_enter_is_not_used_by_either_side(run: Path) -> None:
    run.mkdir(mode=0o700)
    os.chmod(run, 0o755)
    server, addr = await _endpoint(run)
    assert server.local is None  # the executor serves TCP alone
    path = local.socket_path(run, addr)
    assert path is not None and not path.exists()
    # A socket someone else put there is not trusted with the hello either.
    planted = socket.socket(socket.AF_UNIX)
    planted.bind(str(path))
    planted.listen()
    try:
        assert await _answered_over(addr, run) == socket.AF_INET
        planted.setblocking(False)
        with pytest.raises(BlockingIOError):
            planted.accept()  # nobody connected to it
    finally:
        planted.close()
        server.close()


async def test_a_wrong_key_over_the_socket_is_cut_off_and_counts_as_a_drop(run: Path) -> None:
    server, addr = await _endpoint(run)
    waiting: Waiting = {}
    pool = PushPool(waiting, internal_key="int_wrong", max_frame_bytes=1 << 20, local_dir=run)
    dropped: list[tuple[str, str]] = []
    pool.on_drop = lambda where, why: dropped.append((where, why))
    future = waiting["q"] = asyncio.get_running_loop().create_future()
    await pool.send(addr, "q", _query("q"))
    with pytest.raises(WorkerLost):
        await asyncio.wait_for(future, 2.0)
    assert [where for where, _ in dropped] == [addr]
    await pool.aclose()
    server.close()


def test_only_loopback_addresses_that_fit_get_a_socket(tmp_path: Path) -> None:
    assert local.socket_path(tmp_path, "127.0.0.1:9100") == tmp_path / "push-9100.sock"
    assert local.socket_path(tmp_path, "localhost:9100") == tmp_path / "push-9100.sock"
    assert local.socket_path(tmp_path, "[::1]:9100") == tmp_path / "push-9100.sock"
    assert local.socket_path(tmp_path, "10.0.0.5:9100") is None  # may be another host
    assert local.socket_path(tmp_path, "executor:9100") is None
    assert local.socket_path(tmp_path, "not an address") is None
    assert local.socket_path(tmp_path / ("d" * 120), "127.0.0.1:9100") is None  # too long for AF_UNIX


async def test_an_executor_starting_removes_sockets_nobody_listens_on(run: Path) -> None:
    run.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(run / "push-1.sock"))  # what a killed executor leaves
    dead.close()
    fresh = socket.socket(socket.AF_UNIX)
    fresh.bind(str(run / "push-3.sock"))  # bound just now by one starting beside it, not listening yet
    fresh.close()
    long_ago = time.time() - 60
    os.utime(run / "push-1.sock", (long_ago, long_ago))
    live = socket.socket(socket.AF_UNIX)
    live.bind(str(run / "push-2.sock"))
    live.listen()
    try:
        server, addr = await _endpoint(run)
        assert not (run / "push-1.sock").exists()
        assert (run / "push-3.sock").is_socket()  # too young to judge
        assert (run / "push-2.sock").is_socket()  # another executor's, alive
        path = local.socket_path(run, addr)
        assert path is not None and path.is_socket()
        server.close()
    finally:
        live.close()
