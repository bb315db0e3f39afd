"""`executor_mode = "embedded"`: the gateway's process hosts the first CPU executor, and its dispatcher
hands that executor query frames without a socket (`infaas.wire.loopback`). On a whole supervised suite
(embedded defaults), with the two-input wine model: the hosted executor is a worker like any other (its
own port, API, heartbeat), it answers queries with their own rows' logits over no TCP connection, a
second executor process still serves over TCP beside it, and a SIGKILLed gateway process comes back
with its executor, which rejoins as a new incarnation while the other worker keeps answering."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from pathlib import Path

import httpx
import numpy as np
import onnxruntime as ort
import orjson
import psutil
import pytest
import redis

from infaas.clients.executor import ExecutorClient
from infaas.core.errors import NotFound
from infaas.data import store
from infaas.wire import local
from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.e2e.wine import CHEM, register_wine, wine_body, wine_rows
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

APP = "vintner"


def _worker(running: RunningSuite, name: str) -> str:
    return f"cpu-{socket.gethostname()}-{running.suite.port(name)}"


def _field(client: redis.Redis, worker: str, name: str) -> str:
    return store.text(client.hget(store.worker_key(worker), name) or b"")


def _active(client: redis.Redis, worker: str, vid: str) -> bool:
    raw = client.hget(store.instances_key(worker), vid)
    return raw is not None and orjson.loads(raw).get("state") == "active"


def _ask(running: RunningSuite, key: str, rows: np.ndarray) -> list[dict[str, object]]:
    with running.client(key) as client:
        answers = []
        for row in rows:
            response = client.post(f"/v1/apps/{APP}/infer", content=wine_body(row))
            assert response.status_code == 200, response.text
            answers.append(response.json())
    return answers


def _logits(model: Path, rows: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["logits"], {"chem": rows[:, :CHEM], "color": rows[:, CHEM:]})[0])


def _place(running: RunningSuite, sync: redis.Redis, vid: str, *, on: str, off: str) -> None:
    """`vid` loaded on executor `on` and not on `off`, through the executors' own APIs, and so in
    their heartbeats."""

    async def go() -> None:
        executors = ExecutorClient(internal_key=running.settings.internal_key)
        try:
            await executors.load(f"http://127.0.0.1:{running.suite.port(on)}", vid)
            with contextlib.suppress(NotFound):  # it may never have been loaded there
                await executors.unload(f"http://127.0.0.1:{running.suite.port(off)}", vid)
        finally:
            await executors.aclose()

    asyncio.run(go())
    here, there = _worker(running, on), _worker(running, off)
    wait_for(
        lambda: _active(sync, here, vid) and not sync.hexists(store.instances_key(there), vid),
        what=f"{vid} on {on} only",
        timeout_s=60,
        every_s=0.1,
    )


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _gateway_tcp_peers(running: RunningSuite) -> set[int]:
    """The remote ports of the gateway process's TCP connections."""
    gateway = psutil.Process(running.suite.procs["gateway"].pid)
    return {c.raddr.port for c in gateway.net_connections(kind="tcp") if c.raddr}


@pytest.mark.parametrize("dispatch", ["push", "streams"])
def test_the_gateway_hosts_an_executor_that_serves_without_a_socket_and_comes_back_after_a_kill(
    tmp_path: Path, dispatch: str
) -> None:
    settings = _settings(
        tmp_path / "var",
        executor_mode="embedded",
        executors=2,
        autoscale_interval_s=3600.0,
        dispatch=dispatch,
    )
    with own_suite(settings, supervised=True, events=True) as running:
        assert "executor" not in running.suite.procs and "executor-2" in running.suite.procs
        hosted, other = _worker(running, "executor"), _worker(running, "executor-2")
        created = running.admin.post("/v1/apps", json={"name": APP, "cache": False})
        assert created.status_code == 201, created.text
        key = created.json()["api_key"]
        with running.client(key) as client:
            assert register_wine(client, tmp_path, app=APP).status_code == 202
        assert running.wait_ready("wine", timeout_s=300)["status"] == "ready"
        vid = _ask(running, key, wine_rows(1, 0))[0]["variant"]
        assert isinstance(vid, str)
        sync = redis.Redis.from_url(settings.require_redis())
        try:
            # The hosted executor is a worker of its own: its port answers its API, it heartbeats
            # with a push address of its own, beside the separate executor's.
            health = httpx.get(f"http://127.0.0.1:{running.suite.port('executor')}/health", timeout=5)
            assert health.status_code == 200
            push_port = int(_field(sync, hosted, "push").rpartition(":")[2])
            other_push_port = int(_field(sync, other, "push").rpartition(":")[2])

            _place(running, sync, vid, on="executor", off="executor-2")
            rows = wine_rows(40, 1)
            answers = _ask(running, key, rows)
            assert {a["worker"] for a in answers} == {hosted}
            got = np.array([a["outputs"]["logits"][0] for a in answers], dtype=np.float32)  # type: ignore[index]
            np.testing.assert_allclose(got, _logits(tmp_path / "wine.onnx", rows), rtol=0.05, atol=0.25)
            # Served in the gateway's own process: it never opened a connection to that push port.
            assert push_port not in _gateway_tcp_peers(running)

            # The separate executor still serves beside it, through its Unix socket (the same host).
            _place(running, sync, vid, on="executor-2", off="executor")
            answers = _ask(running, key, wine_rows(10, 2))
            assert {a["worker"] for a in answers} == {other}
            other_socket = local.socket_path(local.run_dir(settings.var_dir), _field(sync, other, "push"))
            assert other_socket is not None and other_socket.is_socket()
            assert other_push_port not in _gateway_tcp_peers(running)

            # A crash of the gateway's process takes its executor with it; the supervisor starts both
            # again, and the hosted executor rejoins as a new incarnation.
            before = _field(sync, hosted, "incarnation")
            running.suite.procs["gateway"].send_signal(signal.SIGKILL)
            wait_for(
                lambda: (inc := _field(sync, hosted, "incarnation")) != before and inc,
                what="the hosted executor's new incarnation",
                timeout_s=90,
                every_s=0.2,
            )
            assert running.suite.restarts.get("gateway") == 1
            rows = wine_rows(10, 3)
            wait_for(  # its executor starts first: the gateway's port may not answer yet
                lambda: _healthy(running.url),
                what="the restarted gateway",
                timeout_s=60,
                every_s=0.2,
            )
            answers = _ask(running, key, rows)
            got = np.array([a["outputs"]["logits"][0] for a in answers], dtype=np.float32)  # type: ignore[index]
            np.testing.assert_allclose(got, _logits(tmp_path / "wine.onnx", rows), rtol=0.05, atol=0.25)
            restarts = running.admin.get("/v1/events", params={"kind": "supervisor", "limit": 100}).json()
            assert any(
                e["action"] == "restarted" and (e["details"] or {}).get("service") == "gateway"
                for e in restarts["events"]
            )

            # SIGTERM stops both servers in order: the hosted executor says goodbye (it leaves the live
            # workers at once instead of after its heartbeat's TTL) and the process exits cleanly.
            gateway = running.suite.procs["gateway"]
            gateway.send_signal(signal.SIGTERM)
            assert gateway.wait(timeout=30) == 0
            assert sync.zscore(store.WORKERS, hosted) == 0
        finally:
            sync.close()
