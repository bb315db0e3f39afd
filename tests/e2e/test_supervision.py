"""`infaas run`'s supervision on real processes, under open-loop load: each kind of process is SIGKILLed
in turn (an executor with a second one running, the registry, the planner, the profiler, the jobs worker,
the embedded Redis) and restarted, and no query is lost that a surviving process could answer; the
gateway, the one public port, is killed last and comes back. Every exit and restart is an event."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import httpx
import numpy as np
import orjson
import pytest

from infaas.processes.suite import REDIS, Suite
from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.e2e.wine import CHEM, register_wine
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

RATE_QPS = 40
LOAD_S = 3.0


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[tuple[RunningSuite, str]]:
    """Its own suite (SQLite + embedded Redis, two executors), supervised as `infaas run` does (events
    included), with the two-input wine model registered and profiled; yields it and the app's key."""
    with own_suite(_settings(tmp_path / "var"), supervised=True, events=True) as running:
        key = running.admin.post("/v1/apps", json={"name": "cellar"}).json()["api_key"]
        response = register_wine(running.admin, tmp_path, app="cellar")
        assert response.status_code == 202, response.text
        assert running.wait_ready("wine")["status"] == "ready"
        yield running, key


def healthy(suite: Suite, name: str) -> bool:
    if name == REDIS or name in ("profiler", "jobs"):  # no HTTP port: alive is what there is to see
        proc = suite.supervised()[name]
        return proc.poll() is None
    try:
        return httpx.get(f"http://127.0.0.1:{suite.port(name)}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def back(suite: Suite, name: str, restarts_before: int) -> bool:
    return suite.restarts.get(name, 0) > restarts_before and healthy(suite, name)


def journal(suite: Suite) -> list[dict[str, object]]:
    path = suite.log_dir / "supervisor.log"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def bodies(npz: Path, count: int) -> list[dict[str, object]]:
    """Distinct rows of the wine validation set, each slightly changed: no answer comes from the cache."""
    data, rng = np.load(npz), np.random.default_rng(7)
    rows = np.concatenate([data["chem"], data["color"]], axis=1)
    out: list[dict[str, object]] = []
    for i in range(count):
        row = rows[i % len(rows)] * (1 + rng.normal(0, 1e-3, rows.shape[1]))
        out.append({"inputs": {"chem": [row[:CHEM].tolist()], "color": [row[CHEM:].tolist()]}})
    return out


async def open_loop(
    url: str, key: str, queries: list[dict[str, object]], kill: Callable[[], None]
) -> list[int | str]:
    """RATE_QPS queries a second, each sent on schedule whether or not earlier ones answered; `kill()` is
    called once a quarter of them were sent. Returns each query's status (or its error's name)."""
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as client:

        async def one(body: dict[str, object]) -> int | str:
            try:
                return (await client.post("/v1/models/wine/infer", json=body)).status_code
            except httpx.HTTPError as exc:  # the gateway did not answer at all
                return type(exc).__name__

        loop = asyncio.get_running_loop()
        start, tasks = loop.time(), []
        for i, body in enumerate(queries):
            await asyncio.sleep(max(0.0, start + i / RATE_QPS - loop.time()))  # pacing, not synchronization
            tasks.append(asyncio.create_task(one(body)))
            if i == len(queries) // 4:
                kill()
        return list(await asyncio.gather(*tasks))


def serving_executor(running: RunningSuite, key: str, body: dict[str, object]) -> str:
    with running.client(key) as client:
        worker = client.post("/v1/models/wine/infer", json=body).json()["worker"]
    return next(n for n in ("executor", "executor-2") if worker.endswith(f"-{running.suite.port(n)}"))


def test_each_process_killed_under_load_is_restarted_and_no_answerable_query_is_lost(
    supervised: tuple[RunningSuite, str], tmp_path: Path
) -> None:
    running, key = supervised
    suite = running.suite
    queries = bodies(tmp_path / "wine.npz", int(RATE_QPS * LOAD_S))
    victims = [serving_executor(running, key, queries[0]), "registry", "planner", "profiler", "jobs", REDIS]
    lost: dict[str, list[int | str]] = {}
    for victim in victims:
        before = suite.restarts.get(victim, 0)
        pid = suite.supervised()[victim].pid
        statuses = asyncio.run(open_loop(running.url, key, queries, partial(os.kill, pid, signal.SIGKILL)))
        print(f"\n{victim}: {len(statuses)} queries, {statuses.count(200)} answered")
        lost[victim] = [s for s in statuses if s != 200]
        wait_for(partial(back, suite, victim, before), what=f"{victim} restarted", timeout_s=60)
    assert lost == {victim: [] for victim in victims}

    # The gateway has no replica: queries sent while it is down fail, and it comes back.
    gateway_pid = suite.procs["gateway"].pid
    statuses = asyncio.run(
        open_loop(running.url, key, queries, partial(os.kill, gateway_pid, signal.SIGKILL))
    )
    print(f"\ngateway: {len(statuses)} queries, {statuses.count(200)} answered")
    assert statuses[: len(statuses) // 4] == [200] * (len(statuses) // 4)
    wait_for(lambda: healthy(suite, "gateway"), what="gateway restarted", timeout_s=60)
    with running.client(key) as client:
        assert client.post("/v1/models/wine/infer", json=queries[1]).status_code == 200

    assert not suite.dead()
    exits = {e["service"]: e["exit"] for e in journal(suite) if e["event"] == "exited"}
    assert exits == dict.fromkeys([*victims, "gateway"], "signal SIGKILL")

    def recorded() -> set[tuple[str, str]]:
        page = running.admin.get("/v1/events", params={"kind": "supervisor", "limit": 100}).json()
        return {(e["details"]["service"], e["action"]) for e in page["events"]}

    expected = {(v, a) for v in [*victims, "gateway"] for a in ("exited", "restarted")}
    wait_for(lambda: expected <= recorded(), what="every exit and restart recorded as an event", timeout_s=30)
