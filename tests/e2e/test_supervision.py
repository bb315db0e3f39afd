"""`infaas run`'s supervision on real processes: an executor SIGKILLed under load (with a second one
running) and the registry SIGKILLed are restarted, the gateway stays up, and few queries fail."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import orjson
import pytest

from infaas.processes.suite import Suite
from infaas.processes.supervisor import Supervisor
from infaas_cli.demo_models import DemoModel
from infaas_cli.launcher import start_suite
from tests.e2e.conftest import RunningSuite, _settings, register
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

RATE_QPS = 40
LOAD_S = 4.0


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[RunningSuite]:
    """Its own suite (SQLite + embedded Redis, two executors), supervised as `infaas run` does."""
    settings = _settings(tmp_path / "var")
    suite = start_suite(settings)
    stop = threading.Event()
    thread = threading.Thread(target=Supervisor(suite).run, args=(stop,), name="supervisor")
    thread.start()
    url = f"http://127.0.0.1:{settings.gateway_port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=60)
    try:
        yield RunningSuite(suite=suite, settings=settings, url=url, admin=admin)
    finally:
        stop.set()
        thread.join()
        admin.close()
        suite.stop()


def healthy(suite: Suite, name: str) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{suite.port(name)}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def journal(suite: Suite) -> list[dict[str, object]]:
    path = suite.log_dir / "supervisor.log"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def restarted(suite: Suite, name: str) -> bool:
    return suite.restarts.get(name, 0) >= 1 and healthy(suite, name)


async def open_loop(
    client: httpx.AsyncClient, body: dict[str, object], kill: asyncio.Event
) -> list[int | str]:
    """RATE_QPS queries a second for LOAD_S, each sent on schedule whether or not earlier ones answered;
    `kill` is set once a quarter of them were sent. Returns each query's status (or its error's name)."""

    async def one() -> int | str:
        try:
            return (await client.post("/v1/models/small/infer", json=body)).status_code
        except httpx.HTTPError as exc:  # the gateway did not answer at all
            return type(exc).__name__

    loop = asyncio.get_running_loop()
    start, total, tasks = loop.time(), int(RATE_QPS * LOAD_S), []
    for i in range(total):
        await asyncio.sleep(max(0.0, start + i / RATE_QPS - loop.time()))  # pacing, not synchronization
        tasks.append(asyncio.create_task(one()))
        if i == total // 4:
            kill.set()
    return list(await asyncio.gather(*tasks))


async def test_a_killed_executor_and_registry_are_restarted_and_the_gateway_stays_up(
    supervised: RunningSuite, small_model: DemoModel
) -> None:
    suite = supervised.suite
    key = supervised.admin.post("/v1/apps", json={"name": "shop"}).json()["api_key"]
    assert register(supervised, key, small_model, "small").status_code == 202
    assert supervised.wait_ready("small")["status"] == "ready"
    body = {"inputs": np.load(small_model.validation_path)["x"][:1].tolist()}
    gateway_pid = suite.procs["gateway"].pid

    async with httpx.AsyncClient(
        base_url=supervised.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as client:
        first = await client.post("/v1/models/small/infer", json=body)
        assert first.status_code == 200, first.text
        # Kill the executor that answered: the one with the model loaded.
        worker = first.json()["worker"]
        victim = next(n for n in ("executor", "executor-2") if worker.endswith(f"-{suite.port(n)}"))
        kill = asyncio.Event()

        async def killer() -> None:
            await kill.wait()
            os.kill(suite.procs[victim].pid, signal.SIGKILL)

        statuses, _ = await asyncio.gather(open_loop(client, body, kill), killer())

    failed = [s for s in statuses if s != 200]
    print(f"\n{len(statuses)} queries, {len(failed)} failed: {sorted(set(map(str, failed)))}")
    assert not [s for s in failed if isinstance(s, str)], "the gateway stopped answering"
    assert len(failed) <= len(statuses) // 10, failed

    wait_for(lambda: restarted(suite, victim), what=f"{victim} restarted and healthy", timeout_s=30)
    exits = [e for e in journal(suite) if e["event"] == "exited"]
    assert exits[0]["service"] == victim and exits[0]["exit"] == "signal SIGKILL", exits

    os.kill(suite.procs["registry"].pid, signal.SIGKILL)
    wait_for(lambda: restarted(suite, "registry"), what="registry restarted and healthy", timeout_s=30)
    assert supervised.admin.get("/v1/models/small").status_code == 200

    assert suite.procs["gateway"].pid == gateway_pid and healthy(suite, "gateway")
    assert suite.restarts == {victim: 1, "registry": 1}
    assert not suite.dead()
