"""The suite's ports on a whole supervised suite (embedded defaults): `infaas run`'s executors after the
first step over the ports of the other services. A second executor (a GPU machine's CUDA executor is
one) once listened on the planner's default port, right after the first executor's: the planner failed
to bind and crash-looped, and the launcher took the executor's answer on that port for the planner's.
A suite whose ports another process holds is refused before anything starts, the ports named."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from infaas.processes.suite import free_port
from tests.e2e.conftest import _settings, own_suite

pytestmark = pytest.mark.e2e


def test_a_second_executor_leaves_the_planners_port_to_the_planner(tmp_path: Path) -> None:
    base = free_port(consecutive=3)
    settings = _settings(tmp_path / "var", executor_port=base, planner_port=base + 1)
    with own_suite(settings, supervised=True) as running:
        suite = running.suite
        ports = {name: suite.port(name) for name in ("executor", "executor-2", "planner")}
        assert ports == {"executor": base, "executor-2": base + 2, "planner": base + 1}
        time.sleep(2)  # a planner that cannot bind exits within its start-up; give it the time to
        for name, port in ports.items():
            health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
            assert health["service"] == name.partition("-")[0]
        assert suite.dead() == [] and suite.restarts == {}
        workers = running.admin.get("/v1/workers").json()
        assert {w["id"].rsplit("-", 1)[1] for w in workers} >= {str(base), str(base + 2)}


def test_a_suite_over_ports_another_holds_says_which_and_starts_nothing(tmp_path: Path) -> None:
    # As a second `infaas run` on the same host would find them: the gateway's and the planner's ports
    # listened on by someone else. Refused before any process starts, with the ports named.
    settings = _settings(tmp_path / "var")
    held = []
    for port in (settings.gateway_port, settings.planner_port):
        listener = socket.socket()
        listener.bind(("127.0.0.1", port))
        listener.listen()
        held.append(listener)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "infaas_cli.main", "run", "--no-demo"],
            env=settings.child_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for listener in held:
            listener.close()
    assert done.returncode == 1, done.stderr
    assert (
        f"infaas did not start: ports {settings.gateway_port} (gateway), {settings.planner_port} (planner) "
        "already in use on this host" in done.stderr
    )
    assert "Traceback" not in done.stderr
    var = settings.var_dir
    assert not (var / "redis").exists() and not (var / "logs" / "registry.log").exists()
