"""`infaas run` stopped with Ctrl-C, then Ctrl-C again while it stops: every process it started, the
embedded Redis included, is gone when it exits."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from infaas.core.config import Settings
from tests.e2e.conftest import _settings
from tests.polling import wait_for

pytestmark = pytest.mark.e2e


def up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def launch(tmp_path: Path) -> tuple[Settings, subprocess.Popen[bytes], Path]:
    """`infaas run --no-demo` with its embedded Redis, up and saying so: (its settings, the launcher,
    its output's file)."""
    settings = _settings(tmp_path / "var")
    env = {**settings.child_env(), "INFAAS_REDIS_URL": ""}  # the launcher starts its embedded Redis
    log = tmp_path / "launcher.log"
    with log.open("wb") as out:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "infaas_cli.main", "run", "--no-demo"], env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{settings.gateway_port}"
    try:
        wait_for(lambda: up(url) and "press Ctrl-C" in log.read_text(), what="the suite up", timeout_s=120)
    except BaseException:
        launcher.kill()
        launcher.wait()
        raise
    return settings, launcher, log


def test_a_second_ctrl_c_while_stopping_leaves_nothing_running(tmp_path: Path) -> None:
    _, launcher, log = launch(tmp_path)
    try:
        children = psutil.Process(launcher.pid).children(recursive=True)
        names = {c.name() for c in children}
        assert any("redis" in n for n in names), names
        launcher.send_signal(signal.SIGINT)
        wait_for(lambda: "stopping" in log.read_text(), what="the launcher stopping", timeout_s=30)
        launcher.send_signal(signal.SIGINT)  # the impatient second Ctrl-C
        assert launcher.wait(timeout=60) == 0, log.read_text()[-3000:]
        assert "already stopping" in log.read_text()
        alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        assert alive == [], [(c.pid, c.cmdline()) for c in alive]
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_a_sigkilled_launcher_takes_its_processes_with_it(tmp_path: Path) -> None:
    """SIGKILL runs no code in the launcher: its services hear it through their lifeline, the embedded
    Redis through the kernel's parent-death signal, and the ports are free for the next `infaas run`."""
    settings, launcher, _ = launch(tmp_path)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    children: list[psutil.Process] = []
    try:
        children = psutil.Process(launcher.pid).children(recursive=True)
        assert len(children) >= 6, [c.cmdline() for c in children]
        launcher.kill()
        launcher.wait()

        def gone(c: psutil.Process) -> bool:
            return not c.is_running() or c.status() == psutil.STATUS_ZOMBIE

        wait_for(lambda: all(gone(c) for c in children), what="every process gone", timeout_s=40)
        assert not up(url)
        service_logs = (settings.var_dir / "logs" / "gateway.log").read_text()
        assert "has exited without stopping it" in service_logs, service_logs[-2000:]
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        for c in children:  # orphans of a failed run: init's children now, not ours
            if c.is_running():
                c.kill()
