"""Push connections between two processes of one host over a Unix socket instead of TCP loopback.

An executor that advertises a loopback push address (`127.0.0.1:<port>`, the local suite's) also listens
on `<var_dir>/run/push-<port>.sock`; a dispatcher with the same var dir that connects to that address
tries the socket first and falls back to TCP when there is none or it refuses. The frames, the hello
with the internal key and the loss rule are the push path's, unchanged: only the kernel's way between
the two processes is shorter. A query crosses it twice, and on a core the whole suite shares, the TCP
stack's work on both sides is CPU the query waits for (docs/benchmarks.md, "The push hop over a Unix
socket").

Why the name can be trusted: the port is held by the executor's TCP listener, so no other live process
binds the same name in the same var dir; a file left by a dead one refuses connections, and the dispatcher
then goes over TCP (an executor starting removes such files). The directory must belong to this user and
be closed to everyone else (0700), so nobody else can put a socket there to read the hello: a dispatcher
that finds it otherwise uses TCP.
Only loopback addresses qualify: a routable address may name another host, whose port number could be
the same as a local executor's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path

from infaas.wire.connection import split_addr

log = logging.getLogger("infaas.wire")

_SWEEP_AFTER_S = 10.0
"""How old a socket file must be before an executor starting judges it (`_sweep`)."""

_MAX_PATH = 107
"""Longest path a Unix socket address holds on Linux (108 bytes with the terminating NUL)."""


def run_dir(var_dir: Path) -> Path:
    """Where a suite's processes keep their sockets."""
    return var_dir.resolve() / "run"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def socket_path(directory: Path, addr: str) -> Path | None:
    """The socket an executor at push address `addr` listens on beside TCP, or None when `addr` is not a
    loopback address or the path would not fit in a socket address."""
    try:
        host, port = split_addr(addr)
    except ValueError:
        return None
    if not _loopback(host) or os.name != "posix":  # Windows' event loops have no Unix sockets
        return None
    path = directory / f"push-{port}.sock"
    return path if len(os.fsencode(path)) <= _MAX_PATH else None


def private(directory: Path) -> bool:
    """Whether `directory` is this user's and closed to everyone else."""
    try:
        st = os.stat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


class LocalServer:
    """The Unix socket an executor serves its push protocol on, beside its TCP listener."""

    def __init__(self, server: asyncio.AbstractServer, path: Path) -> None:
        self.server = server
        self.path = path
        self._inode = os.stat(path).st_ino

    def close(self) -> None:
        """No new connections (those open stay open, as a closed TCP server's do); the file goes too,
        unless another process has bound the name since."""
        self.server.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                os.unlink(self.path)


async def serve(factory: Callable[[], asyncio.Protocol], directory: Path, addr: str) -> LocalServer | None:
    """Listen on `addr`'s socket in `directory` (made 0700 if missing); None, with the reason logged,
    where it cannot: dispatchers then use TCP."""
    path = socket_path(directory, addr)
    if path is None:
        return None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(directory):
            log.warning("not serving push on a Unix socket: %s is not this user's alone (0700)", directory)
            return None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # left by a process that held this port before and died: it serves nobody
        _sweep(directory)
        server = await asyncio.get_running_loop().create_unix_server(factory, str(path))
        return LocalServer(server, path)
    except OSError as exc:
        log.warning("not serving push on a Unix socket at %s: %s", path, exc)
        return None


def _sweep(directory: Path) -> None:
    """Remove the sockets in `directory` that nothing listens on any more: an executor that was killed
    leaves its file, and with a new port at each start they would pile up. A socket that refuses a
    connection has no listener; a live one accepts it or, its backlog full, asks to wait. A file bound in
    the last `_SWEEP_AFTER_S` is left alone: another executor starting at the same time may have bound
    it and not listen yet."""
    for stale in directory.glob("push-*.sock"):
        try:
            if time.time() - stale.lstat().st_mtime < _SWEEP_AFTER_S:
                continue
        except OSError:
            continue  # gone meanwhile
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.setblocking(False)
        try:
            probe.connect(str(stale))
        except ConnectionRefusedError:
            with contextlib.suppress(OSError):
                os.unlink(stale)
        except OSError:
            pass  # alive and busy, or not a socket of ours to judge
        finally:
            probe.close()


async def connect(
    factory: Callable[[], asyncio.Protocol], directory: Path, addr: str, timeout_s: float
) -> asyncio.Protocol | None:
    """A connection to `addr`'s executor through its socket, or None where there is none to use (the
    caller connects over TCP)."""
    path = socket_path(directory, addr)
    if path is None or not private(directory):
        return None
    try:
        _, protocol = await asyncio.wait_for(
            asyncio.get_running_loop().create_unix_connection(factory, str(path)), timeout_s
        )
    except (OSError, TimeoutError):
        return None  # no socket, or one left by a dead executor
    return protocol
