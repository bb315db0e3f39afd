"""A suite's processes stop when the process that started them dies, however it dies.

`infaas run` stops its processes in order on Ctrl-C or SIGTERM. A launcher that is SIGKILLed (or
OOM-killed, or whose terminal's session ends without a signal reaching it) runs no code: without this,
its services, each in a session of its own, lived on as orphans holding the suite's ports, its embedded
Redis and its SQLite file, and the next `infaas run` found every port taken.

- **The lifeline** is a pipe. The first process in a tree that spawns one (the launcher; a planner run
  on its own with the local worker provider) creates it and holds its only write end for its whole life.
  Each Python child inherits the read end at the same number (`INFAAS_LIFELINE_FD`) and passes that same
  one on to the processes it starts in turn (the planner's added executors), so that they all hang on
  the launcher, not on their own parent: a restarted planner does not take its executors with it.
- **A child** blocks one thread in `read()` on it: no wake-up while the launcher lives, EOF the moment
  the kernel closes the launcher's descriptors, whatever killed it. It then stops itself the way the
  launcher would have (SIGTERM: uvicorn's and Celery's graceful stop), and exits outright if that takes
  longer than `GRACE_S`.
- **The embedded Redis** (`redis-server`) cannot watch a pipe: it gets the kernel's parent-death signal
  (`PR_SET_PDEATHSIG`) instead, which fires when the *thread* that started it ends. It is started by
  the launcher's main thread or its supervisor's thread, both of which live as long as the launcher.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable

log = logging.getLogger("infaas.lifeline")

LIFELINE_ENV = "INFAAS_LIFELINE_FD"
GRACE_S = 15.0
"""How long a child whose launcher died gives its graceful stop before it exits outright."""
_PR_SET_PDEATHSIG = 1

_held: tuple[int, int] | None = None  # (read end, write end) of the pipe this process created
_lock = threading.Lock()


def _inherited() -> int | None:
    """The read end this process was given, when the variable names an open pipe (a stale or forged
    value, or a descriptor the variable does not describe, is ignored: this process then leads)."""
    raw = os.environ.get(LIFELINE_ENV, "")
    if not raw.isdigit():
        return None
    fd = int(raw)
    try:
        return fd if stat.S_ISFIFO(os.fstat(fd).st_mode) else None
    except OSError:
        return None


def read_end() -> int:
    """The lifeline to hand a child: the one this process inherited, or else one it creates and holds
    (its write end never leaves this process: `os.pipe` descriptors are not inherited by default)."""
    global _held
    inherited = _inherited()
    if inherited is not None:
        return inherited
    with _lock:
        if _held is None:
            _held = os.pipe()
        return _held[0]


def child_env(fd: int) -> dict[str, str]:
    return {LIFELINE_ENV: str(fd)}


def watch(on_lost: Callable[[], None] | None = None) -> threading.Thread | None:
    """In a child: when its lifeline reaches EOF (the launcher died), call `on_lost` (default: stop this
    process as the launcher would have). None when this process was given no lifeline."""
    fd = _inherited()
    if fd is None:
        return None
    thread = threading.Thread(target=_wait, args=(fd, on_lost or _stop_self), name="lifeline", daemon=True)
    thread.start()
    return thread


def _wait(fd: int, on_lost: Callable[[], None]) -> None:
    while True:
        try:
            if os.read(fd, 1) == b"":  # nobody writes: every write end is closed
                break
        except InterruptedError:
            continue
        except OSError as exc:  # closed under us: nothing to watch any more
            log.warning("the lifeline cannot be read (%s): this process will not stop with its launcher", exc)
            return
    on_lost()


def _stop_self() -> None:
    log.warning(
        "the process that started this one has exited without stopping it: stopping (SIGTERM), "
        "then exiting outright after %.0f s",
        GRACE_S,
    )
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_S)
    log.error("still running %.0f s after the launcher died: exiting now", GRACE_S)
    os._exit(1)


def parent_death_signal() -> Callable[[], None] | None:
    """A `preexec_fn` that has the kernel send the child SIGTERM when the thread that started it ends
    (Linux only; None elsewhere). It runs between fork and exec: it calls nothing but `prctl` and
    `getppid`, and exits at once if the parent is already gone."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    prctl = ctypes.CDLL(name, use_errno=True).prctl  # loaded here, never in the forked child
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # it died before the call: no signal would come
            os._exit(1)

    return preexec
