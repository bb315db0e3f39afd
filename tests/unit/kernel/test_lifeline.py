"""The lifeline: a child hears its launcher die (EOF on the pipe), whatever killed it; a forged or stale
`INFAAS_LIFELINE_FD` is ignored; the embedded Redis's parent-death signal fires when its parent is
SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import psutil
import pytest

from infaas.processes import lifeline
from tests.polling import wait_for


def test_no_lifeline_given_means_nothing_to_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lifeline.LIFELINE_ENV, raising=False)
    assert lifeline.watch(lambda: None) is None


@pytest.mark.parametrize("value", ["", "x", "-1", "99999", "1.5"])
def test_a_value_naming_no_open_pipe_is_ignored(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(lifeline.LIFELINE_ENV, value)
    assert lifeline.watch(lambda: None) is None


def test_a_descriptor_that_is_no_pipe_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryFile() as f:
        monkeypatch.setenv(lifeline.LIFELINE_ENV, str(f.fileno()))
        assert lifeline.watch(lambda: None) is None


def test_the_watcher_hears_every_write_end_close(monkeypatch: pytest.MonkeyPatch) -> None:
    read, write = os.pipe()
    monkeypatch.setenv(lifeline.LIFELINE_ENV, str(read))
    lost = threading.Event()
    try:
        thread = lifeline.watch(lost.set)
        assert thread is not None
        # The launcher lives: nothing happens. A real wait, the one in this tier: that nothing happens is
        # seen only over some time (the watcher blocks in read(), which has no event to wait on).
        assert not lost.wait(0.2)
        assert lifeline.read_end() == read  # a child passes on what it was given, creates nothing
        os.close(write)
        assert lost.wait(5)
        thread.join(5)
        assert not thread.is_alive()
    finally:
        os.close(read)


PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from infaas.processes import lifeline

    fd = lifeline.read_end()
    ours = subprocess.Popen(
        [sys.executable, "-c", sys.argv[1]], env={**lifeline.child_env(fd), "PYTHONPATH": sys.argv[2]},
        pass_fds=(fd,),
    )
    foreign = subprocess.Popen(["sleep", "120"], preexec_fn=lifeline.parent_death_signal())
    print(ours.pid, foreign.pid, flush=True)
    time.sleep(120)
    """
)

CHILD = textwrap.dedent(
    """
    import signal, sys, time
    from infaas.processes import lifeline

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the graceful stop a service would make
    lifeline.watch()
    print("watching", flush=True)
    time.sleep(120)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipes and prctl as Linux has them")
def test_children_of_a_sigkilled_parent_stop() -> None:
    root = str(Path(__file__).resolve().parents[3])
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, CHILD, root],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert parent.stdout is not None
    # The parent's line (both children started) and the child's (its watch begun), in either order.
    lines = sorted(parent.stdout.readline().split() for _ in range(2))
    assert lines[1] == [b"watching"], lines
    children = [psutil.Process(int(p)) for p in lines[0]]
    try:
        assert all(c.is_running() for c in children)  # alive while the parent lives
        parent.send_signal(signal.SIGKILL)
        parent.wait()

        def gone(c: psutil.Process) -> bool:
            return not c.is_running() or c.status() == psutil.STATUS_ZOMBIE

        wait_for(lambda: all(gone(c) for c in children), what="the orphans gone", timeout_s=10)
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
        for c in children:
            if c.is_running():
                c.kill()
