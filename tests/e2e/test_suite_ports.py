"""The suite's ports on a whole supervised suite (embedded defaults): `infaas run`'s executors after the
first step over the ports of the other services. A second executor (a GPU machine's CUDA executor is
one) once listened on the planner's default port, right after the first executor's: the planner failed
to bind and crash-looped, and the launcher took the executor's answer on that port for the planner's."""

from __future__ import annotations

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
